// The happens-before decoder (gaplanner/search/order_decoder.py): on a multi-core problem a block's
// conflicts follow from its happens-before vectors (order.hpp): per group of the OrderIndex the blocks that
// may conflict with it are one run of ranks. A decode scans those runs, keeps the placed blocks that really
// conflict (tested exactly) and places the block by the interval decoder's rules, so it gives the pair-list
// decoder's offsets for the same order, in memory O(n x components).
#pragma once
#include "interval_decoder.hpp"
#include "order.hpp"

namespace gp {

inline int64_t decode_order_row(const int64_t* order, int64_t n_order, int64_t first, const int64_t* known,
                                const Array<int64_t>& sizes, const Array<int64_t>& alignments,
                                const OrderIndex& index, const Array<int64_t>& pinned, bool best_fit,
                                RankWorkspace& w, int64_t* offsets) {
  const int64_t n = sizes.len();
  std::fill(w.placed_start.begin(), w.placed_start.end(), NOT_PLACED);
  int64_t peak = 0;
  for (int64_t k = 0; k < pinned.len(); ++k) {
    const int64_t b = pinned[k];
    w.placed_start[index.rank[b]] = known[b], w.placed_end[index.rank[b]] = known[b] + sizes[b];
    peak = std::max(peak, known[b] + sizes[b]);
  }
  for (int64_t p = 0; p < n_order; ++p) {
    const int64_t b = order[p], s = index.rank[b];
    if (w.placed_start[s] != NOT_PLACED) continue;
    int64_t offset;
    if (p < first) {
      offset = known[b];
    } else {
      Array<int64_t> runs = w.runs;
      order_runs(s, index, runs);
      int64_t count = 0;
      for (int64_t g = 0; g < index.groups.shape[1]; ++g) {
        for (int64_t r = runs(0, g); r < runs(1, g); ++r) {
          if (w.placed_start[r] != NOT_PLACED && r != s && conflict(index.release, index.acquire, r, s)) {
            w.found_start[count] = w.placed_start[r], w.found_end[count] = w.placed_end[r];
            ++count;
          }
        }
      }
      offset = w.offset_among(count, sizes[b], alignments[b], best_fit);
    }
    w.placed_start[s] = offset, w.placed_end[s] = offset + sizes[b];
    peak = std::max(peak, offset + sizes[b]);
  }
  for (int64_t b = 0; b < n; ++b) offsets[b] = w.placed_start[index.rank[b]];
  return peak;
}

}  // namespace gp
