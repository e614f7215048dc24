// Happens-before as vectors (gaplanner/problem/order.py): the kernels other modules' kernels call to find
// a block's conflicts from OrderIndex.arrays() = (rank, acquire, release, reach, groups), all int64.
//
// Along a group (a chain of non-decreasing acquire, one lifetime class), "b is before the block" is false
// then true, and so is "the group's greatest release so far passes b's acquire": the blocks that may
// conflict with b are one run of ranks between the two switches, found by two binary searches, and each
// block of the run is then tested exactly (conflict).
#pragma once
#include "common.hpp"

namespace gp {

struct OrderIndex {
  Array<int64_t> rank, acquire, release, reach, groups;  // by rank; groups (3, groups): first, end, monotone
};

// The index from a tuple argument (OrderIndex.arrays()).
inline OrderIndex read_order_index(Args& args, Py_ssize_t i) {
  return OrderIndex{args.item<int64_t>(i, 0, "index"), args.item<int64_t>(i, 1, "index"),
                    args.item<int64_t>(i, 2, "index"), args.item<int64_t>(i, 3, "index"),
                    args.item<int64_t>(i, 4, "index")};
}

// Whether rank r is done before rank s starts.
inline bool order_before(const Array<int64_t>& release, int64_t r, const Array<int64_t>& acquire, int64_t s) {
  const int64_t k = release.shape[1];
  const int64_t* rel = release.data + r * k;
  const int64_t* acq = acquire.data + s * k;
  for (int64_t i = 0; i < k; ++i) {
    if (rel[i] > acq[i]) return false;
  }
  return true;
}

// Whether some release of rank r's group up to it passes rank s's acquire somewhere.
inline bool order_passes(const Array<int64_t>& reach, int64_t r, const Array<int64_t>& acquire, int64_t s) {
  const int64_t k = reach.shape[1];
  const int64_t* far = reach.data + r * k;
  const int64_t* acq = acquire.data + s * k;
  for (int64_t i = 0; i < k; ++i) {
    if (far[i] > acq[i]) return true;
  }
  return false;
}

// Whether ranks r and s (distinct) conflict: neither is done before the other starts.
inline bool conflict(const Array<int64_t>& release, const Array<int64_t>& acquire, int64_t r, int64_t s) {
  return !order_before(release, r, acquire, s) && !order_before(release, s, acquire, r);
}

// Fill runs (2, groups): per group, the first and end rank of the blocks that may conflict with rank s.
inline void order_runs(int64_t s, const OrderIndex& index, Array<int64_t>& runs) {
  const Array<int64_t>& groups = index.groups;
  for (int64_t g = 0; g < groups.shape[1]; ++g) {
    const int64_t first = groups(0, g);
    int64_t end = groups(1, g);
    if (groups(2, g) == 0) {  // the leftover group: scanned whole
      runs(0, g) = first, runs(1, g) = end;
      continue;
    }
    int64_t lo = first, hi = end;
    while (lo < hi) {  // the first rank that starts after s is done
      const int64_t mid = (lo + hi) / 2;
      if (order_before(index.release, s, index.acquire, mid)) hi = mid;
      else lo = mid + 1;
    }
    end = lo, lo = first, hi = end;
    while (lo < hi) {  // the first rank whose group has reached past s's start
      const int64_t mid = (lo + hi) / 2;
      if (order_passes(index.reach, mid, index.acquire, s)) hi = mid;
      else lo = mid + 1;
    }
    runs(0, g) = lo, runs(1, g) = end;
  }
}

}  // namespace gp
