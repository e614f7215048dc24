// Kernels of gaplanner/problem/bounds.py: cliques of the conflict graph whose weight bounds every plan.
#include "common.hpp"

namespace {

// The heaviest clique grown greedily from each instant's live set (see bounds.py).
//
// At each start time t the blocks live at t (lower <= t < upper) are a clique; blocks adjacent to all
// of them are added, heaviest first (the lowest index among equal sizes), while any is left. The live
// set is kept by a sweep over the start times and `adjacent[j]` counts the live blocks (and blocks
// added) that j conflicts with, so each instant costs the neighbours of one live block and of the
// blocks added, not a pass over every block and every live block's neighbours. A block adjacent to
// all of them is a neighbour of one that starts at t, and stays a candidate while it is adjacent to every
// block added (the graph has no repeated pairs, so each added block raises a count by at most one).
template <class Index>
struct GreedyClique {
  gp::Array<int64_t> lower, upper, sizes, indptr;
  gp::Array<Index> indices;
  std::vector<int64_t> adjacent;
  std::vector<char> in_clique;  // live at t, or added to its clique
  int64_t members = 0, weight = 0;

  GreedyClique(gp::Array<int64_t> lower, gp::Array<int64_t> upper, gp::Array<int64_t> sizes,
               gp::Array<int64_t> indptr, gp::Array<Index> indices)
      : lower(lower), upper(upper), sizes(sizes), indptr(indptr), indices(indices) {}

  void take(int64_t m, int64_t delta) {
    in_clique[m] = delta > 0;
    members += delta;
    weight += delta * sizes[m];
    for (int64_t e = indptr[m]; e < indptr[m + 1]; ++e) adjacent[indices[e]] += delta;
  }

  bool fits(int64_t j) const { return !in_clique[j] && adjacent[j] == members; }

  // The blocks that may be added: the neighbours of `starter`, or every block if none (when only empty
  // lifetimes start at t).
  std::vector<int64_t> candidates(int64_t starter) const {
    std::vector<int64_t> found;
    if (starter < 0) {
      for (int64_t j = 0; j < sizes.len(); ++j) found.push_back(j);
    } else {
      for (int64_t e = indptr[starter]; e < indptr[starter + 1]; ++e) found.push_back(indices[e]);
    }
    return found;
  }

  // The live set's weight grown by the heaviest common neighbour while there is one (then undone).
  int64_t grown(int64_t starter) {
    std::vector<int64_t> open = candidates(starter), added;
    while (true) {
      int64_t pick = -1;
      size_t kept = 0;
      for (int64_t j : open) {
        if (!fits(j)) continue;
        open[kept++] = j;
        if (pick < 0 || sizes[j] > sizes[pick] || (sizes[j] == sizes[pick] && j < pick)) pick = j;
      }
      open.resize(kept);
      if (pick < 0) break;
      take(pick, 1);
      added.push_back(pick);
    }
    const int64_t total = weight;
    for (int64_t m : added) take(m, -1);
    return total;
  }

  int64_t heaviest() {
    const int64_t n = sizes.len();
    adjacent.assign(static_cast<size_t>(n), 0);
    in_clique.assign(static_cast<size_t>(n), 0);
    std::vector<int64_t> by_lower(static_cast<size_t>(n)), by_upper(static_cast<size_t>(n));
    for (int64_t m = 0; m < n; ++m) by_lower[m] = by_upper[m] = m;
    std::sort(by_lower.begin(), by_lower.end(), [&](int64_t a, int64_t b) { return lower[a] < lower[b]; });
    std::sort(by_upper.begin(), by_upper.end(), [&](int64_t a, int64_t b) { return upper[a] < upper[b]; });
    int64_t best = 0;
    size_t started = 0, ended = 0;
    while (started < by_lower.size()) {
      const int64_t t = lower[by_lower[started]];
      for (; ended < by_upper.size() && upper[by_upper[ended]] <= t; ++ended) {
        if (in_clique[by_upper[ended]]) take(by_upper[ended], -1);
      }
      int64_t starter = -1;
      for (; started < by_lower.size() && lower[by_lower[started]] == t; ++started) {
        const int64_t m = by_lower[started];
        if (upper[m] > t) take(m, 1), starter = m;
      }
      best = std::max(best, grown(starter));
    }
    return best;
  }
};

PyObject* greedy_clique(gp::Args& args) {
  auto lower = args.array<int64_t>(0, "lower");
  auto upper = args.array<int64_t>(1, "upper");
  auto sizes = args.array<int64_t>(2, "sizes");
  auto indptr = args.array<int64_t>(3, "indptr");
  int64_t weight;
  if (args.is<int32_t>(4)) {
    auto indices = args.array<int32_t>(4, "indices");
    gp::NoGil released;
    weight = GreedyClique<int32_t>(lower, upper, sizes, indptr, indices).heaviest();
  } else {
    auto indices = args.array<int64_t>(4, "indices");
    gp::NoGil released;
    weight = GreedyClique<int64_t>(lower, upper, sizes, indptr, indices).heaviest();
  }
  return gp::to_py(weight);
}

struct CliqueSearch {
  gp::Array<bool> adjacent;  // (n, n)
  gp::Array<int64_t> weights;
  int64_t budget;

  // The candidates a clique heavier than `target` (beyond the blocks chosen) must take one of.
  //
  // Greedy independent sets, each taking the least residual weight of its members from every member:
  // a clique takes at most one block of a set, so the sets' minima summed bound its weight. Once that
  // sum passes `target`, only blocks whose weight is not yet used up can lift a clique above it
  // (networkx's max_weight_clique, weighted by splitting). Out of budget it stops early: the blocks
  // left still hold every such clique.
  std::vector<int64_t> branching_nodes(const std::vector<int64_t>& candidates, int64_t target) {
    const int64_t m = static_cast<int64_t>(candidates.size());
    std::vector<int64_t> residual(candidates.size()), members(candidates.size());
    std::vector<char> alive(candidates.size(), 1);
    for (int64_t j = 0; j < m; ++j) residual[j] = weights[candidates[j]];
    int64_t left = m, total = 0;
    while (left > 0 && budget >= 0) {
      budget -= m;
      int64_t k = 0;
      for (int64_t j = 0; j < m; ++j) {
        if (!alive[j]) continue;
        const int64_t v = candidates[j];
        bool independent = true;
        for (int64_t q = 0; q < k; ++q) {
          if (adjacent(v, candidates[members[q]])) {
            independent = false;
            break;
          }
        }
        if (independent) members[k++] = j;
      }
      int64_t least = residual[members[0]];
      for (int64_t q = 1; q < k; ++q) least = std::min(least, residual[members[q]]);
      total += least;
      if (total > target) break;
      for (int64_t q = 0; q < k; ++q) {
        residual[members[q]] -= least;
        if (residual[members[q]] == 0) {
          alive[members[q]] = 0;
          --left;
        }
      }
    }
    std::vector<int64_t> kept;
    for (int64_t j = 0; j < m; ++j) {
      if (alive[j]) kept.push_back(candidates[j]);
    }
    return kept;
  }

  // The heaviest clique weight found: `best` or a clique of `weight` plus some `candidates`.
  int64_t expand(const std::vector<int64_t>& candidates, int64_t weight, int64_t best) {
    best = std::max(best, weight);
    budget -= static_cast<int64_t>(candidates.size());
    if (budget < 0 || candidates.empty()) return best;
    const std::vector<int64_t> branching = branching_nodes(candidates, best - weight);
    std::vector<char> remaining(static_cast<size_t>(adjacent.shape[0]), 1);
    std::vector<int64_t> common;
    for (int64_t i = static_cast<int64_t>(branching.size()) - 1; i >= 0; --i) {
      const int64_t v = branching[i];
      remaining[v] = 0;
      common.clear();
      for (int64_t w : candidates) {
        if (remaining[w] && adjacent(v, w)) common.push_back(w);
      }
      best = expand(common, weight + weights[v], best);
      if (budget < 0) return best;
    }
    return best;
  }
};

// heaviest_clique's branch and bound: expand(adjacent, weights, candidates, best, work) -> weight.
// `work` holds the budget left and is updated in place.
PyObject* heaviest_clique(gp::Args& args) {
  auto adjacent = args.array<bool>(0, "adjacent");
  auto weights = args.array<int64_t>(1, "weights");
  auto candidates = args.array<int64_t>(2, "candidates");
  const int64_t known = args.integer(3, "known");
  auto work = args.array<int64_t>(4, "work", true);
  int64_t best;
  {
    gp::NoGil released;
    CliqueSearch search{adjacent, weights, work[0]};
    best = search.expand(std::vector<int64_t>(candidates.data, candidates.data + candidates.len()), 0, known);
    work[0] = search.budget;
  }
  return gp::to_py(best);
}

}  // namespace

GP_MODULE(_bounds, "Kernels of gaplanner.problem.bounds.",
          GP_DEF(greedy_clique, "greedy_clique(lower, upper, sizes, indptr, indices) -> weight"),
          GP_DEF(heaviest_clique, "heaviest_clique(adjacent, weights, candidates, known, work) -> weight"))
