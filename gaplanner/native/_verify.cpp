// Kernels of gaplanner/plans/verify.py: the first clash of a plan, by a sweep over time or over addresses.
#include "common.hpp"

namespace {

// A count tree over the blocks ranked by address: leaf `leaves + r` counts whether rank r is live.
struct CountTree {
  int64_t leaves = 1;
  std::vector<int64_t> tree;
  explicit CountTree(int64_t n) {
    while (leaves < n) leaves *= 2;
    tree.assign(static_cast<size_t>(2 * leaves), 0);
  }
  void mark(int64_t r, int64_t delta) {
    for (int64_t node = leaves + r; node >= 1; node >>= 1) tree[node] += delta;
  }
  // The nearest marked rank below r (step -1) or above it (step 1); -1 if none.
  int64_t neighbour(int64_t r, int64_t step) const {
    int64_t node = leaves + r;
    const int64_t side = step < 0 ? 0 : 1;
    while (node > 1) {
      if ((node & 1) != side && tree[node + step] > 0) {
        node += step;
        while (node < leaves) {  // down to the marked leaf nearest r: the child nearer r if marked
          const int64_t near = 2 * node + 1 - side, far = 2 * node + side;
          node = tree[near] > 0 ? near : far;
        }
        return node - leaves;
      }
      node >>= 1;
    }
    return -1;
  }
};

// The first pair of blocks live at once whose address ranges overlap, or (-1, -1).
//
// `events` is every block's end (b) and start (n + b) in time order, ends first on ties. The live
// blocks are marks in a count tree over the blocks ranked by (offset, block) (`by_address`): a newcomer
// is checked against its two nearest live ranks, which suffices while the live ranges are disjoint.
PyObject* sweep_overlap(gp::Args& args) {
  auto events = args.array<int64_t>(0, "events");
  auto by_address = args.array<int64_t>(1, "by_address");
  auto offsets = args.array<int64_t>(2, "offsets");
  auto ends = args.array<int64_t>(3, "ends");
  const int64_t n = offsets.len();
  int64_t first = -1, second = -1;
  {
    gp::NoGil released;
    std::vector<int64_t> rank(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) rank[by_address[k]] = k;
    CountTree live(n);
    for (int64_t p = 0; p < events.len(); ++p) {
      const int64_t e = events[p];
      const int64_t b = e < n ? e : e - n;
      if (e < n) {
        live.mark(rank[b], -1);
        continue;
      }
      const int64_t below = live.neighbour(rank[b], -1);
      if (below >= 0 && ends[by_address[below]] > offsets[b]) {
        first = by_address[below], second = b;
        break;
      }
      const int64_t above = live.neighbour(rank[b], 1);
      if (above >= 0 && offsets[by_address[above]] < ends[b]) {
        first = b, second = by_address[above];
        break;
      }
      live.mark(rank[b], 1);
    }
  }
  return Py_BuildValue("(LL)", static_cast<long long>(first), static_cast<long long>(second));
}

// The first pair (a, b), a < b, overlapping in memory with neither done before the other starts (some
// component of one's release above the other's acquire, both ways), or (-1, -1).
PyObject* address_overlap(gp::Args& args) {
  auto by_address = args.array<int64_t>(0, "by_address");
  auto offsets = args.array<int64_t>(1, "offsets");
  auto ends = args.array<int64_t>(2, "ends");
  auto acquire = args.array<int64_t>(3, "acquire");
  auto release = args.array<int64_t>(4, "release");
  const int64_t n = acquire.shape[0], k = acquire.shape[1];
  int64_t first = -1, second = -1;
  {
    gp::NoGil released;
    std::vector<int64_t> starts(static_cast<size_t>(n));  // the offsets in address order
    for (int64_t p = 0; p < n; ++p) starts[p] = offsets[by_address[p]];
    for (int64_t p = 0; p < n && first < 0; ++p) {
      const int64_t a = by_address[p], end = ends[a];
      const int64_t* release_a = release.data + a * k;
      const int64_t* acquire_a = acquire.data + a * k;
      for (int64_t q = p + 1; q < n && starts[q] < end; ++q) {
        const int64_t b = by_address[q];
        const int64_t* release_b = release.data + b * k;
        const int64_t* acquire_b = acquire.data + b * k;
        int64_t a_late = 0, b_late = 0;  // some component of one's release above the other's acquire
        for (int64_t i = 0; i < k; ++i) {
          a_late |= release_a[i] > acquire_b[i];
          b_late |= release_b[i] > acquire_a[i];
        }
        if (a_late && b_late) {
          first = std::min(a, b), second = std::max(a, b);
          break;
        }
      }
    }
  }
  return Py_BuildValue("(LL)", static_cast<long long>(first), static_cast<long long>(second));
}

}  // namespace

GP_MODULE(_verify, "Kernels of gaplanner.plans.verify.",
          GP_DEF(sweep_overlap, "sweep_overlap(events, by_address, offsets, ends) -> (a, b) or (-1, -1)"),
          GP_DEF(address_overlap,
                 "address_overlap(by_address, offsets, ends, acquire, release) -> (a, b) or (-1, -1)"))
