// Kernels of gaplanner/search/variation.py: crossover, mutations and hole moves on allocation orders.
// Every random draw comes from the caller (numpy arrays of uniforms), so a seed gives the same children.
#include "common.hpp"

namespace {

// Move the gene at `source` to `target`, shifting the ones between.
void move(int64_t* order, int64_t source, int64_t target) {
  if (source < target) {
    std::rotate(order + source, order + source + 1, order + target + 1);
  } else if (target < source) {
    std::rotate(order + target, order + source, order + source + 1);
  }
}

int64_t position(const int64_t* order, int64_t n, int64_t gene) {
  for (int64_t k = 0; k < n; ++k) {
    if (order[k] == gene) return k;
  }
  return -1;
}

// crossover(parents, pairs, cuts, children): linear order crossover per pair, first[a:b] kept in place,
// the rest in the second parent's order.
PyObject* crossover(gp::Args& args) {
  auto parents = args.array<int64_t>(0, "parents");
  auto pairs = args.array<int64_t>(1, "pairs");
  auto cuts = args.array<int64_t>(2, "cuts");
  auto children = args.array<int64_t>(3, "children", true);
  {
    gp::NoGil released;
    const int64_t n = parents.ndim == 2 ? parents.shape[1] : 0;
    std::vector<char> taken(static_cast<size_t>(n));
    for (int64_t i = 0; i < pairs.len(); ++i) {
      const int64_t* first = parents.row(pairs(i, 0));
      const int64_t* second = parents.row(pairs(i, 1));
      int64_t* child = children.row(i);
      const int64_t cut_a = cuts(i, 0), cut_b = cuts(i, 1);
      std::fill(taken.begin(), taken.end(), 0);
      for (int64_t k = cut_a; k < cut_b; ++k) {
        child[k] = first[k];
        taken[first[k]] = 1;
      }
      int64_t pos = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t g = second[k];
        if (taken[g]) continue;
        if (pos == cut_a) pos = cut_b;
        child[pos++] = g;
      }
    }
  }
  Py_RETURN_NONE;
}

constexpr int64_t PEAK_MOVE = 0, SWAP = 1, INSERTION = 2;  // else INVERSION (variation.py's MUTATIONS)

// Move one critical block (critical[block]) to an earlier place in the order. The blocks ending at the
// peak are the ones to lower; placing one of them earlier lets first-fit find it a lower gap before the
// others fill it. The distance is uniform: favouring short moves, cheap to re-decode, did worse.
void peak_move(int64_t* order, int64_t n, const bool* critical, double u, double v) {
  int64_t count = 0;
  for (int64_t b = 0; b < n; ++b) count += critical[b];
  if (count == 0) return;
  int64_t pick = static_cast<int64_t>(u * static_cast<double>(count));
  for (int64_t source = 0; source < n; ++source) {
    if (critical[order[source]]) {
      if (pick == 0) {
        if (source > 0) move(order, source, static_cast<int64_t>(v * static_cast<double>(source)));
        return;
      }
      --pick;
    }
  }
}

// mutate(orders, rows, kinds, draws, critical): orders[rows[r]] mutated by kinds[r] with draws[r].
PyObject* mutate(gp::Args& args) {
  auto orders = args.array<int64_t>(0, "orders", true);
  auto rows = args.array<int64_t>(1, "rows");
  auto kinds = args.array<int64_t>(2, "kinds");
  auto draws = args.array<double>(3, "draws");
  auto critical = args.array<bool>(4, "critical");
  {
    gp::NoGil released;
    const int64_t n = orders.shape[1];
    const double width = static_cast<double>(n);
    for (int64_t r = 0; r < rows.len(); ++r) {
      int64_t* order = orders.row(rows[r]);
      const double u = draws(r, 0), v = draws(r, 1);
      if (kinds[r] == PEAK_MOVE) {
        peak_move(order, n, critical.row(r), u, v);
      } else if (kinds[r] == SWAP) {
        std::swap(order[static_cast<int64_t>(u * width)], order[static_cast<int64_t>(v * width)]);
      } else if (kinds[r] == INSERTION) {
        move(order, static_cast<int64_t>(u * width), static_cast<int64_t>(v * width));
      } else {
        int64_t i = static_cast<int64_t>(u * (width + 1)), j = static_cast<int64_t>(v * (width + 1));
        if (i > j) std::swap(i, j);
        std::reverse(order + i, order + j);
      }
    }
  }
  Py_RETURN_NONE;
}

constexpr int64_t HOLE_BLOCKERS = 32;  // variation.py's: a hole move moves at most this many blockers

struct Guide {  // HoleGuide
  gp::Array<int64_t> sizes, lower, upper, start_load, indptr;
  gp::Array<int32_t> indices;
};

// The start time within c's lifetime at which the most bytes are live.
int64_t busiest_instant(int64_t c, const Guide& g) {
  int64_t t = g.lower[c], most = g.start_load[c];
  for (int64_t s = 0; s < g.lower.len(); ++s) {
    if (g.lower[c] <= g.lower[s] && g.lower[s] < g.upper[c] && g.start_load[s] > most) t = g.lower[s], most = g.start_load[s];
  }
  return t;
}

// The block ending at the peak that draw u picks (of those, in block order).
int64_t critical_block(const int64_t* offsets, const Guide& g, int64_t n, double u) {
  int64_t peak = 0, critical = 0;
  for (int64_t b = 0; b < n; ++b) peak = std::max(peak, offsets[b] + g.sizes[b]);
  for (int64_t b = 0; b < n; ++b) critical += offsets[b] + g.sizes[b] == peak;
  int64_t pick = static_cast<int64_t>(u * static_cast<double>(critical));
  for (int64_t b = 0; b < n; ++b) {
    if (offsets[b] + g.sizes[b] == peak) {
      if (pick == 0) return b;
      --pick;
    }
  }
  return -1;
}

// Lower the block over a hole at the peak's busiest instant below the blocks that keep it out
// (variation.py's hole_moves says why and how).
void hole_move(int64_t* order, const int64_t* offsets, const Guide& g, const double* draws) {
  const int64_t n = g.sizes.len();
  const int64_t c = critical_block(offsets, g, n, draws[0]);
  const int64_t t = busiest_instant(c, g);
  std::vector<int64_t> live;
  for (int64_t b = 0; b < n; ++b) {
    if (g.lower[b] <= t && g.upper[b] > t) live.push_back(b);
  }
  std::stable_sort(live.begin(), live.end(), [&](int64_t a, int64_t b) { return offsets[a] < offsets[b]; });
  int64_t free = 0, front = 0;
  for (int64_t b : live) {
    free += std::max<int64_t>(0, offsets[b] - front);
    front = std::max(front, offsets[b] + g.sizes[b]);
  }
  if (free == 0) {
    const int64_t source = position(order, n, c);
    move(order, source, static_cast<int64_t>(draws[1] * static_cast<double>(source)));
    return;
  }
  double pick = draws[1] * static_cast<double>(free);
  int64_t lid = -1, bottom = 0;
  front = 0;
  for (int64_t b : live) {
    if (offsets[b] > front) {
      pick -= static_cast<double>(offsets[b] - front);
      if (pick < 0) {
        lid = b, bottom = front;
        break;
      }
    }
    front = std::max(front, offsets[b] + g.sizes[b]);
  }
  if (lid < 0) {  // rounding left the draw past the last hole: the highest hole's
    front = 0;
    for (int64_t b : live) {
      if (offsets[b] > front) lid = b, bottom = front;
      front = std::max(front, offsets[b] + g.sizes[b]);
    }
  }
  const int64_t top = offsets[lid];
  int64_t blockers[HOLE_BLOCKERS], overlaps[HOLE_BLOCKERS];
  int64_t count = 0, first = position(order, n, lid), widest = 1;
  const bool from_lifetimes = g.indptr.len() == 0;  // no pair list: the lifetimes overlapping the lid's
  const int64_t edges = from_lifetimes ? n : g.indptr[lid + 1] - g.indptr[lid];
  for (int64_t e = 0; e < edges; ++e) {
    const int64_t j = from_lifetimes ? e : g.indices[g.indptr[lid] + e];
    if (from_lifetimes && (j == lid || g.lower[j] >= g.upper[lid] || g.upper[j] <= g.lower[lid])) continue;
    if (count < HOLE_BLOCKERS && offsets[j] < top && offsets[j] + g.sizes[j] > bottom) {
      blockers[count] = j;
      overlaps[count] = std::min(offsets[j] + g.sizes[j], top) - std::max(offsets[j], bottom);
      widest = std::max(widest, overlaps[count]);
      ++count;
      first = std::min(first, position(order, n, j));
    }
  }
  move(order, position(order, n, lid), first);
  for (int64_t m = 0; m < count; ++m) {
    if (draws[2 + 2 * m] * static_cast<double>(widest) < static_cast<double>(overlaps[m]))
      move(order, position(order, n, blockers[m]), static_cast<int64_t>(draws[3 + 2 * m] * static_cast<double>(first)));
  }
}

// hole_moves(orders, rows, offsets, sizes, lower, upper, start_load, indptr, indices, draws).
PyObject* hole_moves(gp::Args& args) {
  auto orders = args.array<int64_t>(0, "orders", true);
  auto rows = args.array<int64_t>(1, "rows");
  auto offsets = args.array<int64_t>(2, "offsets");
  Guide guide{args.array<int64_t>(3, "sizes"),      args.array<int64_t>(4, "lower"),
              args.array<int64_t>(5, "upper"),      args.array<int64_t>(6, "start_load"),
              args.array<int64_t>(7, "indptr"),     args.array<int32_t>(8, "indices")};
  auto draws = args.array<double>(9, "draws");
  {
    gp::NoGil released;
    for (int64_t r = 0; r < rows.len(); ++r) hole_move(orders.row(rows[r]), offsets.row(r), guide, draws.row(r));
  }
  Py_RETURN_NONE;
}

}  // namespace

GP_MODULE(_variation, "Kernels of gaplanner.search.variation.",
          GP_DEF(crossover, "crossover(parents, pairs, cuts, children): one child per pair, into children"),
          GP_DEF(mutate, "mutate(orders, rows, kinds, draws, critical): rows of orders mutated in place"),
          GP_DEF(hole_moves, "hole_moves(orders, rows, offsets, sizes, lower, upper, start_load, indptr, indices, "
                             "draws): rows of orders hole-moved in place"))
