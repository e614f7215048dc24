// The interval decoder (gaplanner/search/interval_decoder.py): on a one-core problem two blocks conflict
// exactly when their lifetimes overlap, so a block's placed neighbours are found from the lifetimes alone.
// The blocks are grouped by lifetime length class ([2**c, 2**(c + 1))) and ranked by start within a class:
// a block can overlap only one run of ranks per class, found by two binary searches, and a decode scans
// those runs in rank order (memory in order, a branch-free test each). Memory O(n) whatever the pairs.
//
// The gathered ranges are placed by the pair-list decoder's rules (first-fit sweeps a few times, then
// sorts by start and finishes in one pass; best-fit sorts and scans the gaps), in int64 with index sorts,
// never packed keys, so any offset below 2**63 works at any block count. The order decoder shares them.
#pragma once
#include <limits>

#include "sweep.hpp"

namespace gp {

// ---- placing one block among gathered ranges (int64; the interval and order decoders) -------------------

constexpr int64_t NOT_PLACED = std::numeric_limits<int64_t>::max();
constexpr int64_t SWEEPS_BEFORE_SORT = 16;
constexpr int64_t SORT_MIN_RANGES = 512;

// Lowest aligned offset clear of the `count` ranges: sweeps, and with many ranges still in the way after
// SWEEPS_BEFORE_SORT sweeps (under a stack of them), one pass sorted by start.
inline int64_t first_fit_offset(int64_t size, int64_t alignment, const int64_t* starts, const int64_t* ends,
                                int64_t count, std::vector<int64_t>& scratch) {
  const int64_t sweeps = count < SORT_MIN_RANGES ? count + 1 : SWEEPS_BEFORE_SORT;  // a jump passes a range
  auto [candidate, fits] = sweep<int64_t>(size, alignment, starts, ends, count, 0, sweeps);
  if (fits) return candidate;
  scratch.clear();
  for (int64_t k = 0; k < count; ++k) {
    if (ends[k] > candidate) scratch.push_back(k);  // only these can still move the candidate
  }
  // Ties in start leave the result the same in any order: sorted by (start, index).
  std::sort(scratch.begin(), scratch.end(), [&](int64_t a, int64_t b) {
    return starts[a] < starts[b] || (starts[a] == starts[b] && a < b);
  });
  for (int64_t k : scratch) {
    if (starts[k] >= candidate + size) break;
    if (ends[k] > candidate) candidate = align_up(ends[k], alignment);
  }
  return candidate;
}

// Offset of the smallest gap between the ranges that holds `size` (the lowest such), else their top.
inline int64_t best_fit_offset(int64_t size, int64_t alignment, const int64_t* starts, const int64_t* ends,
                               int64_t count, std::vector<int64_t>& scratch) {
  scratch.resize(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) scratch[k] = k;
  std::stable_sort(scratch.begin(), scratch.end(),
                   [&](int64_t a, int64_t b) { return starts[a] < starts[b]; });
  int64_t frontier = 0, best = -1, best_gap = std::numeric_limits<int64_t>::max();
  for (int64_t k : scratch) {
    const int64_t start = align_up(frontier, alignment);
    const int64_t gap = starts[k] - start;
    if (size <= gap && gap < best_gap) best = start, best_gap = gap;
    frontier = std::max(frontier, ends[k]);
  }
  return best >= 0 ? best : align_up(frontier, alignment);
}

// One thread's arrays for the interval and order decoders: placed ranges by rank, gathered ranges, runs.
struct RankWorkspace {
  std::vector<int64_t> placed_start, placed_end, found_start, found_end, scratch;
  Buffer<int64_t> runs;  // (2, groups): the order decoder's runs
  RankWorkspace(int64_t n, int64_t groups)
      : placed_start(n), placed_end(n), found_start(std::max<int64_t>(n, 1)),
        found_end(std::max<int64_t>(n, 1)), runs(2, groups) {}

  // The offset of a block among the `count` gathered ranges, by best-fit or first-fit.
  int64_t offset_among(int64_t count, int64_t size, int64_t alignment, bool best_fit) {
    const int64_t* starts = found_start.data();
    const int64_t* ends = found_end.data();
    return best_fit ? best_fit_offset(size, alignment, starts, ends, count, scratch)
                    : first_fit_offset(size, alignment, starts, ends, count, scratch);
  }
};

// ---- the interval decoder (gaplanner/search/interval_decoder.py) -----------------------------------------

struct IntervalIndex {
  Array<int64_t> lower, upper, rank, sorted_lower, sorted_upper, classes;  // classes: (3, classes)
};

inline IntervalIndex read_interval_index(Args& args, Py_ssize_t i) {
  return IntervalIndex{args.item<int64_t>(i, 0, "index"), args.item<int64_t>(i, 1, "index"),
                       args.item<int64_t>(i, 2, "index"), args.item<int64_t>(i, 3, "index"),
                       args.item<int64_t>(i, 4, "index"), args.item<int64_t>(i, 5, "index")};
}

// The placed ranges of the blocks that may overlap b and end after it starts, into w.found_*; their count.
inline int64_t interval_gather(int64_t b, const IntervalIndex& index, RankWorkspace& w) {
  const Array<int64_t>& classes = index.classes;
  const int64_t after = index.lower[b];
  int64_t count = 0;
  for (int64_t c = 0; c < classes.shape[1]; ++c) {
    const int64_t* run = index.sorted_lower.data + classes(0, c);
    const int64_t* run_end = index.sorted_lower.data + classes(1, c);
    const int64_t* sorted = index.sorted_lower.data;
    const int64_t first = std::upper_bound(run, run_end, index.lower[b] - classes(2, c)) - sorted;
    const int64_t end = std::lower_bound(run, run_end, index.upper[b]) - sorted;
    for (int64_t r = first; r < end; ++r) {
      w.found_start[count] = w.placed_start[r];
      w.found_end[count] = w.placed_end[r];
      count += (index.sorted_upper[r] > after) & (w.placed_start[r] != NOT_PLACED);
    }
  }
  return count;
}

// Place the blocks of `order` from the lifetimes; write offsets; return the peak (decode_interval_row).
inline int64_t decode_interval_row(const int64_t* order, int64_t n_order, int64_t first, const int64_t* known,
                                   const Array<int64_t>& sizes, const Array<int64_t>& alignments,
                                   const IntervalIndex& index, const Array<int64_t>& pinned, bool best_fit,
                                   RankWorkspace& w, int64_t* offsets) {
  const int64_t n = sizes.len();
  std::fill(w.placed_start.begin(), w.placed_start.end(), NOT_PLACED);
  int64_t peak = 0;
  auto place = [&](int64_t b, int64_t offset) {
    w.placed_start[index.rank[b]] = offset;
    w.placed_end[index.rank[b]] = offset + sizes[b];
    peak = std::max(peak, offset + sizes[b]);
  };
  for (int64_t k = 0; k < pinned.len(); ++k) place(pinned[k], known[pinned[k]]);
  for (int64_t p = 0; p < n_order; ++p) {
    const int64_t b = order[p];
    if (w.placed_start[index.rank[b]] != NOT_PLACED) continue;
    int64_t offset;
    if (p < first) {
      offset = known[b];
    } else {
      offset = w.offset_among(interval_gather(b, index, w), sizes[b], alignments[b], best_fit);
    }
    place(b, offset);
  }
  for (int64_t b = 0; b < n; ++b) offsets[b] = w.placed_start[index.rank[b]];
  return peak;
}

}  // namespace gp
