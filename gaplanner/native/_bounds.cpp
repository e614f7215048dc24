// Kernels of gaplanner/problem/bounds.py: cliques of the conflict graph whose weight bounds every plan.
#include "common.hpp"

namespace {

// Weight of the heaviest clique grown greedily from each instant's live set (see bounds.py).
template <class Index>
int64_t greedy_clique_weight(gp::Array<int64_t> lower, gp::Array<int64_t> upper, gp::Array<int64_t> sizes,
                             gp::Array<int64_t> indptr, gp::Array<Index> indices) {
  const int64_t n = sizes.len();
  std::vector<int64_t> instants(lower.data, lower.data + lower.len());
  std::sort(instants.begin(), instants.end());
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  std::vector<int64_t> adjacent(static_cast<size_t>(n));
  std::vector<char> in_clique(static_cast<size_t>(n));
  int64_t best = 0;
  for (int64_t t : instants) {
    std::fill(adjacent.begin(), adjacent.end(), 0);
    std::fill(in_clique.begin(), in_clique.end(), 0);
    int64_t weight = 0, needed = 0;
    auto take = [&](int64_t m) {
      in_clique[m] = 1;
      weight += sizes[m];
      for (int64_t e = indptr[m]; e < indptr[m + 1]; ++e) ++adjacent[indices[e]];
    };
    for (int64_t m = 0; m < n; ++m) {
      if (lower[m] <= t && upper[m] > t) {
        take(m);
        ++needed;
      }
    }
    while (true) {
      int64_t pick = -1;
      for (int64_t j = 0; j < n; ++j) {
        if (!in_clique[j] && adjacent[j] == needed && (pick < 0 || sizes[j] > sizes[pick])) pick = j;
      }
      if (pick < 0) break;
      take(pick);
      ++needed;
    }
    best = std::max(best, weight);
  }
  return best;
}

PyObject* greedy_clique(gp::Args& args) {
  auto lower = args.array<int64_t>(0, "lower");
  auto upper = args.array<int64_t>(1, "upper");
  auto sizes = args.array<int64_t>(2, "sizes");
  auto indptr = args.array<int64_t>(3, "indptr");
  int64_t weight;
  if (args.is<int32_t>(4)) {
    auto indices = args.array<int32_t>(4, "indices");
    gp::NoGil released;
    weight = greedy_clique_weight(lower, upper, sizes, indptr, indices);
  } else {
    auto indices = args.array<int64_t>(4, "indices");
    gp::NoGil released;
    weight = greedy_clique_weight(lower, upper, sizes, indptr, indices);
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
