// The pair-list decoder (gaplanner/search/decoder.py), the GA's hot path: blocks placed one by one in the
// order given, first-fit (the lowest aligned offset clear of every placed neighbour) or best-fit (the
// smallest gap between them that holds the block).
//
// The placed ranges live in one table of T, a slot per block, where a block not yet placed holds a
// sentinel range above every offset. First-fit copies the ranges of all of a block's neighbours, placed or
// not (no test per edge), and sweeps them; the neighbour lists are padded to whole vectors, so each sweep
// is a vector loop with no tail. A block with hundreds of ranges stacked deep finishes in one pass over them
// sorted by start instead. Best-fit keeps only the placed neighbours, sorts them by start (packed integer
// keys) and scans the gaps once. T is int32 when every offset fits: half the memory traffic, twice the
// SIMD width.
#pragma once
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "interval_decoder.hpp"

namespace gp {

// One thread's arrays, reused row after row: the placed ranges (slot n: the never-placed block the lists
// are padded with), the gathered ranges, and the sorts' scratch.
template <class T>
struct PairWorkspace {
  std::vector<T> placed_start, placed_end, starts, ends;
  std::vector<int64_t> above, spare, buckets, keys, firsts;
  PairWorkspace(int64_t n, const Array<int64_t>& indptr) : placed_start(n + 1), placed_end(n + 1) {
    int64_t width = 1;
    for (int64_t b = 0; b < n; ++b) width = std::max(width, indptr[b + 1] - indptr[b]);
    starts.resize(width), ends.resize(width);
    above.resize(width), spare.resize(width), buckets.resize(width), keys.resize(width);
  }
};

// Copy the ranges of the `count` neighbours, placed or not: a block not placed yet holds the sentinel
// range, which no sweep hits, so first-fit needs no test per edge here. With AVX2, eight (int32) or four
// (int64) neighbours at a time by vector gathers.
template <class T>
inline void gather_ranges(const uint32_t* __restrict neighbours, int64_t count, const T* placed_start,
                          const T* placed_end, T* __restrict starts, T* __restrict ends) {
  int64_t k = 0;
#if defined(__AVX2__)
  if constexpr (sizeof(T) == 4) {
    const int* first = reinterpret_cast<const int*>(placed_start);
    const int* last = reinterpret_cast<const int*>(placed_end);
    for (; k + 8 <= count; k += 8) {
      const __m256i at = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(neighbours + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(starts + k), _mm256_i32gather_epi32(first, at, 4));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ends + k), _mm256_i32gather_epi32(last, at, 4));
    }
  } else {
    const long long* first = reinterpret_cast<const long long*>(placed_start);
    const long long* last = reinterpret_cast<const long long*>(placed_end);
    for (; k + 4 <= count; k += 4) {
      const __m128i at = _mm_loadu_si128(reinterpret_cast<const __m128i*>(neighbours + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(starts + k), _mm256_i32gather_epi64(first, at, 8));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ends + k), _mm256_i32gather_epi64(last, at, 8));
    }
  }
#endif
  for (; k < count; ++k) {
    starts[k] = placed_start[neighbours[k]];
    ends[k] = placed_end[neighbours[k]];
  }
}

// Sort index[:count] (each below 2**index_bits) by keys[index]: a counting pass into about `count`
// buckets of equal width, then an insertion sort that moves keys within their buckets. Keys bunched into
// a few buckets would make that quadratic: past a linear budget of moves, sort packed
// key << index_bits | index integers instead.
template <class T>
inline void sort_indices(int64_t* index, int64_t count, const T* keys, int64_t index_bits, int64_t* spare,
                         int64_t* buckets, std::vector<int64_t>& firsts) {
  if (count < 2) return;
  int64_t low = std::numeric_limits<int64_t>::max() / 2, high = 0;
  for (int64_t p = 0; p < count; ++p) {
    low = std::min(low, static_cast<int64_t>(keys[index[p]]));
    high = std::max(high, static_cast<int64_t>(keys[index[p]]));
  }
  int shift = 0;
  while (((high - low) >> shift) >= count) ++shift;
  firsts.assign(static_cast<size_t>(((high - low) >> shift) + 2), 0);
  for (int64_t p = 0; p < count; ++p) {
    buckets[p] = (static_cast<int64_t>(keys[index[p]]) - low) >> shift;
    ++firsts[buckets[p] + 1];
  }
  for (size_t d = 0; d + 1 < firsts.size(); ++d) firsts[d + 1] += firsts[d];
  for (int64_t p = 0; p < count; ++p) spare[firsts[buckets[p]]++] = index[p];
  int64_t budget = 8 * count;
  for (int64_t p = 1; p < count; ++p) {
    const int64_t k = spare[p];
    const T key = keys[k];
    int64_t q = p;
    while (q > 0 && keys[spare[q - 1]] > key) {
      spare[q] = spare[q - 1];
      --q;
    }
    spare[q] = k;
    budget -= p - q;
    if (budget < 0) {
      for (int64_t r = 0; r < count; ++r) {
        spare[r] = (static_cast<int64_t>(keys[index[r]]) << index_bits) | index[r];
      }
      std::sort(spare, spare + count);
      for (int64_t r = 0; r < count; ++r) index[r] = spare[r] & ((int64_t{1} << index_bits) - 1);
      return;
    }
  }
  std::copy(spare, spare + count, index);
}

// First-fit for a block with many ranges: a few sweeps, then one pass in order of start. Each sweep climbs
// one layer of a stack of ranges, and the long-lived blocks of a large graph sit under stacks hundreds of
// layers deep; a block with fewer than SORT_MIN_RANGES ranges sweeps to the end instead (sorting them
// costs more than the sweeps it saves).
template <class T>
inline int64_t first_fit_deep(T size, T alignment, int64_t count, int64_t index_bits, PairWorkspace<T>& w) {
  const T* starts = w.starts.data();
  const T* ends = w.ends.data();
  const auto [candidate, fits] = sweep<T>(size, alignment, starts, ends, count, 0, SWEEPS_BEFORE_SORT);
  if (fits) return candidate;
  int64_t live = 0;  // the ranges ending above the candidate, in order of start
  for (int64_t k = 0; k < count; ++k) {
    w.above[live] = k;
    live += ends[k] > candidate;
  }
  sort_indices<T>(w.above.data(), live, starts, index_bits, w.spare.data(), w.buckets.data(), w.firsts);
  int64_t at = candidate;
  for (int64_t p = 0; p < live; ++p) {
    const int64_t k = w.above[p];
    if (starts[k] >= at + size) break;
    if (ends[k] > at) at = align_up(ends[k], alignment);
  }
  return at;
}

// Offset of the smallest gap between the ranges that holds `size` (else their top).
template <class T>
inline int64_t pair_best_fit(T size, T alignment, int64_t count, int64_t index_bits, PairWorkspace<T>& w) {
  int64_t* keys = w.keys.data();
  for (int64_t k = 0; k < count; ++k) keys[k] = (static_cast<int64_t>(w.starts[k]) << index_bits) | k;
  std::sort(keys, keys + count);  // the keys are distinct: any sort gives numba's order
  const int64_t mask = (int64_t{1} << index_bits) - 1;
  int64_t frontier = 0, best = -1, best_gap = std::numeric_limits<int64_t>::max();
  for (int64_t p = 0; p < count; ++p) {
    const int64_t k = keys[p] & mask;
    const int64_t start = align_up(frontier, alignment);
    const int64_t gap = w.starts[k] - start;
    if (size <= gap && gap < best_gap) best = start, best_gap = gap;
    frontier = std::max(frontier, static_cast<int64_t>(w.ends[k]));
  }
  return best >= 0 ? best : align_up(frontier, alignment);
}

// Offset of a block by best-fit, or by first-fit when it has many neighbours: both sort the ranges, so
// they gather the placed neighbours only (every one copied, the count advancing past placed ones: no
// branch per edge). Kept out of decode_pair_row's loop, which stays small for the common case.
template <class T>
int64_t sorting_offset(T size, T alignment, const uint32_t* neighbours, int64_t degree, bool best_fit,
                       int64_t index_bits, T sentinel, PairWorkspace<T>& w) {
  int64_t count = 0;
  for (int64_t k = 0; k < degree; ++k) {
    const uint32_t j = neighbours[k];
    w.starts[count] = w.placed_start[j];
    w.ends[count] = w.placed_end[j];
    count += w.placed_start[j] != sentinel;
  }
  if (best_fit) return pair_best_fit<T>(size, alignment, count, index_bits, w);
  if (count >= SORT_MIN_RANGES) return first_fit_deep<T>(size, alignment, count, index_bits, w);
  return sweep<T>(size, alignment, w.starts.data(), w.ends.data(), count, 0, count + 1).first;
}

// Place the blocks of `order`; write every block's offset; return the peak (decoder.py's decode_row).
// The pinned blocks come first at their offsets in `known`, wherever the order puts them, then the first
// `first` blocks of the order at theirs; the rest by first-fit (or best-fit) after them.
template <class T>
int64_t decode_pair_row(const int64_t* order, int64_t first, const int64_t* known, const Array<T>& sizes,
                        const Array<T>& alignments, const Array<int64_t>& indptr,
                        const Array<uint32_t>& indices,
                        const Array<int64_t>& pinned, bool best_fit, int64_t index_bits, T sentinel,
                        PairWorkspace<T>& w, int64_t* offsets) {
  const int64_t n = sizes.len();
  std::fill(w.placed_start.begin(), w.placed_start.end(), sentinel);
  std::fill(w.placed_end.begin(), w.placed_end.end(), sentinel);
  T* __restrict placed_start = w.placed_start.data();
  T* __restrict placed_end = w.placed_end.data();
  int64_t peak = 0;
  auto place_known = [&](int64_t b) {
    placed_start[b] = static_cast<T>(known[b]);
    placed_end[b] = static_cast<T>(known[b] + sizes[b]);
    peak = std::max(peak, static_cast<int64_t>(placed_end[b]));
  };
  for (int64_t k = 0; k < pinned.len(); ++k) place_known(pinned[k]);
  for (int64_t p = 0; p < first; ++p) place_known(order[p]);
  T* __restrict starts = w.starts.data();
  T* __restrict ends = w.ends.data();
  for (int64_t p = first; p < n; ++p) {
    const uint32_t b = static_cast<uint32_t>(order[p]);
    if (pinned.len() && placed_start[b] != sentinel) continue;
    const uint32_t* neighbours = indices.data + indptr[b];
    const int64_t degree = indptr[b + 1] - indptr[b];
    int64_t offset;
    if (!best_fit && degree < SORT_MIN_RANGES) {
      gather_ranges<T>(neighbours, degree, placed_start, placed_end, starts, ends);
      offset = sweep<T>(sizes[b], alignments[b], starts, ends, degree, 0, degree + 1).first;
    } else {
      offset = sorting_offset<T>(sizes[b], alignments[b], neighbours, degree, best_fit, index_bits, sentinel,
                                 w);
    }
    placed_start[b] = static_cast<T>(offset);
    placed_end[b] = static_cast<T>(offset + sizes[b]);
    peak = std::max(peak, offset + sizes[b]);
  }
  for (int64_t b = 0; b < n; ++b) offsets[b] = placed_start[b];
  return peak;
}

}  // namespace gp
