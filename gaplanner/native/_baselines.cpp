// Kernels of gaplanner/search/baselines.py: best-fit with coalescing, over lifetimes or over conflicts.
#include <limits>

#include "order.hpp"

namespace {

int64_t align_up(int64_t x, int64_t alignment) { return gp::floor_div(x + alignment - 1, alignment) * alignment; }

// An offset-sorted free list whose adjacent ranges are coalesced.
struct FreeList {
  std::vector<int64_t> start, end;
  int64_t count = 0;
  explicit FreeList(int64_t capacity) : start(capacity), end(capacity) {}

  void erase(int64_t k) {
    std::copy(start.begin() + k + 1, start.begin() + count, start.begin() + k);
    std::copy(end.begin() + k + 1, end.begin() + count, end.begin() + k);
    --count;
  }

  // Insert [from, to), coalescing neighbours.
  void release(int64_t from, int64_t to) {
    const int64_t at = std::lower_bound(start.begin(), start.begin() + count, from) - start.begin();
    const bool merge_prev = at > 0 && end[at - 1] == from;
    const bool merge_next = at < count && start[at] == to;
    if (merge_prev && merge_next) {
      end[at - 1] = end[at];
      erase(at);
    } else if (merge_prev) {
      end[at - 1] = to;
    } else if (merge_next) {
      start[at] = from;
    } else {
      std::copy_backward(start.begin() + at, start.begin() + count, start.begin() + count + 1);
      std::copy_backward(end.begin() + at, end.begin() + count, end.begin() + count + 1);
      start[at] = from, end[at] = to;
      ++count;
    }
  }

  // Allocate [offset, to) out of free range k; keep what is left of it.
  void take(int64_t k, int64_t offset, int64_t to) {
    const int64_t from = start[k], stop = end[k];
    erase(k);
    if (offset > from) release(from, offset);
    if (stop > to) release(to, stop);
  }
};

std::vector<int64_t> stable_order(const gp::Array<int64_t>& keys) {
  std::vector<int64_t> order(static_cast<size_t>(keys.len()));
  for (int64_t k = 0; k < keys.len(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  return order;
}

// best_fit_coalescing(sizes, alignments, lower, reuse_at, step) -> offsets: blocks by start; a block's
// space is free again from reuse_at; the best free range, else the largest grown by moving every block
// above it up (arena growth in multiples of step).
PyObject* best_fit_coalescing(gp::Args& args) {
  auto sizes = args.array<int64_t>(0, "sizes");
  auto alignments = args.array<int64_t>(1, "alignments");
  auto lower = args.array<int64_t>(2, "lower");
  auto reuse_at = args.array<int64_t>(3, "reuse_at");
  const int64_t step = args.integer(4, "step");
  const int64_t n = sizes.len();
  gp::Array<int64_t> offsets;
  PyObject* result = gp::new_array<int64_t>({n}, &offsets);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  std::fill(offsets.data, offsets.data + n, -1);
  FreeList free(2 * n + 2);
  int64_t arena = 0, freed = 0;
  const std::vector<int64_t> by_start = stable_order(lower), by_release = stable_order(reuse_at);
  for (int64_t b : by_start) {
    while (freed < n && reuse_at[by_release[freed]] <= lower[b]) {
      const int64_t r = by_release[freed++];
      free.release(offsets[r], offsets[r] + sizes[r]);
    }
    const int64_t size = sizes[b], alignment = alignments[b];
    int64_t best = -1, best_size = std::numeric_limits<int64_t>::max();
    for (int64_t k = 0; k < free.count; ++k) {
      const int64_t usable = free.end[k] - align_up(free.start[k], alignment);
      if (size <= usable && usable < best_size) best = k, best_size = usable;
    }
    if (best < 0) {
      int64_t largest = -1, largest_size = -1;
      for (int64_t k = 0; k < free.count; ++k) {
        if (free.end[k] - free.start[k] > largest_size) largest = k, largest_size = free.end[k] - free.start[k];
      }
      if (largest < 0) {  // nothing free: an empty range at the top of the arena
        free.release(arena, arena);
        largest = free.count - 1;
      }
      const int64_t cut = free.end[largest];
      const int64_t shift = align_up(align_up(free.start[largest], alignment) + size - cut, step);
      for (int64_t j = 0; j < n; ++j) {
        if (offsets[j] >= cut) offsets[j] += shift;
      }
      for (int64_t k = 0; k < free.count; ++k) {
        if (k != largest && free.start[k] >= cut) free.start[k] += shift, free.end[k] += shift;
      }
      free.end[largest] = cut + shift;
      arena += shift;
      best = largest;
    }
    const int64_t offset = align_up(free.start[best], alignment);
    free.take(best, offset, offset + size);
    offsets[b] = offset;
  }
  return result;
}

template <class Index>
struct Conflicts {  // the pair list, or (indptr empty) the happens-before index
  gp::Array<int64_t> indptr;
  gp::Array<Index> indices;
  gp::OrderIndex index;
  std::vector<int64_t> block_of;
  gp::Buffer<int64_t> runs;
  Conflicts(gp::Array<int64_t> indptr_, gp::Array<Index> indices_, gp::OrderIndex index_)
      : indptr(indptr_), indices(indices_), index(index_), block_of(index_.rank.len()),
        runs(2, index_.groups.shape[1]) {
    for (int64_t b = 0; b < index.rank.len(); ++b) block_of[index.rank[b]] = b;
  }

  // The ranges of b's placed conflicts into starts/ends; their count.
  int64_t placed(int64_t b, const int64_t* offsets, const gp::Array<int64_t>& sizes, int64_t* starts, int64_t* ends) {
    int64_t count = 0;
    auto add = [&](int64_t j) {
      if (offsets[j] >= 0) starts[count] = offsets[j], ends[count] = offsets[j] + sizes[j], ++count;
    };
    if (indptr.len()) {
      for (int64_t e = indptr[b]; e < indptr[b + 1]; ++e) add(indices[e]);
      return count;
    }
    const int64_t s = index.rank[b];
    gp::Array<int64_t> view = runs;
    gp::order_runs(s, index, view);
    for (int64_t g = 0; g < index.groups.shape[1]; ++g) {
      for (int64_t r = view(0, g); r < view(1, g); ++r) {
        if (r != s && offsets[block_of[r]] >= 0 && gp::conflict(index.release, index.acquire, r, s)) add(block_of[r]);
      }
    }
    return count;
  }
};

// Best-fit-coalescing where each block's free list is the arena less its placed conflicts: the gaps
// between them up to the arena's top, in order of offset; none fitting, the largest grows.
template <class Index>
void place_over_conflicts(const gp::Array<int64_t>& sizes, const gp::Array<int64_t>& alignments,
                          const gp::Array<int64_t>& order, Conflicts<Index>& conflicts, int64_t step,
                          int64_t* offsets) {
  const int64_t n = sizes.len();
  std::fill(offsets, offsets + n, -1);
  std::vector<int64_t> starts(static_cast<size_t>(n)), ends(static_cast<size_t>(n)), by_start;
  int64_t arena = 0;
  for (int64_t p = 0; p < order.len(); ++p) {
    const int64_t b = order[p];
    const int64_t count = conflicts.placed(b, offsets, sizes, starts.data(), ends.data());
    by_start.resize(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) by_start[k] = k;
    // Blocks starting together leave no gap between them, so the order of ties is moot.
    std::sort(by_start.begin(), by_start.end(), [&](int64_t a, int64_t c) { return starts[a] < starts[c]; });
    const int64_t size = sizes[b], alignment = alignments[b];
    int64_t best = -1, best_size = std::numeric_limits<int64_t>::max();
    int64_t largest_start = arena, largest_end = arena, frontier = 0;  // nothing free: an empty gap at the top
    for (int64_t q = 0; q <= count; ++q) {
      const int64_t gap_end = q < count ? starts[by_start[q]] : arena;
      if (gap_end > frontier) {
        const int64_t usable = gap_end - align_up(frontier, alignment);
        if (size <= usable && usable < best_size) best = frontier, best_size = usable;
        if (gap_end - frontier > largest_end - largest_start) largest_start = frontier, largest_end = gap_end;
      }
      if (q < count) frontier = std::max(frontier, ends[by_start[q]]);
    }
    if (best < 0) {  // the largest gap grows: every block from its end on moves up alike
      const int64_t shift = align_up(align_up(largest_start, alignment) + size - largest_end, step);
      for (int64_t j = 0; j < n; ++j) {
        if (offsets[j] >= largest_end) offsets[j] += shift;
      }
      arena += shift;
      best = largest_start;
    }
    offsets[b] = align_up(best, alignment);
  }
}

// best_fit_over_conflicts(sizes, alignments, order, indptr, indices, index, step) -> offsets.
PyObject* best_fit_over_conflicts(gp::Args& args) {
  auto sizes = args.array<int64_t>(0, "sizes");
  auto alignments = args.array<int64_t>(1, "alignments");
  auto order = args.array<int64_t>(2, "order");
  auto indptr = args.array<int64_t>(3, "indptr");
  const gp::OrderIndex index = gp::read_order_index(args, 5);
  const int64_t step = args.integer(6, "step");
  gp::Array<int64_t> offsets;
  PyObject* result = gp::new_array<int64_t>({sizes.len()}, &offsets);
  if (result == nullptr) return nullptr;
  if (args.is<int32_t>(4)) {
    Conflicts<int32_t> conflicts(indptr, args.array<int32_t>(4, "indices"), index);
    gp::NoGil released;
    place_over_conflicts(sizes, alignments, order, conflicts, step, offsets.data);
  } else {
    Conflicts<int64_t> conflicts(indptr, args.array<int64_t>(4, "indices"), index);
    gp::NoGil released;
    place_over_conflicts(sizes, alignments, order, conflicts, step, offsets.data);
  }
  return result;
}

}  // namespace

GP_MODULE(_baselines, "Kernels of gaplanner.search.baselines.",
          GP_DEF(best_fit_coalescing, "best_fit_coalescing(sizes, alignments, lower, reuse_at, step) -> offsets"),
          GP_DEF(best_fit_over_conflicts,
                 "best_fit_over_conflicts(sizes, alignments, order, indptr, indices, index, step) -> offsets"))
