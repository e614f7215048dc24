// The first-fit sweep every decoder shares: jump a candidate offset past every range overlapping it until
// none does, in vectors of T lanes (int32 doubles the lanes of int64).
#pragma once
#include "common.hpp"

namespace gp {

inline int64_t align_up(int64_t x, int64_t alignment) {
  return alignment == 1 ? x : floor_div(x + alignment - 1, alignment) * alignment;
}

// The sweep's vectors: 32 bytes of T (8 int32 or 4 int64 lanes), four at a time (GCC vector extensions).
template <class T>
struct LanesOf;
template <>
struct LanesOf<int32_t> {
  typedef int32_t type __attribute__((vector_size(32)));
};
template <>
struct LanesOf<int64_t> {
  typedef int64_t type __attribute__((vector_size(32)));
};
template <class T>
using Lanes = typename LanesOf<T>::type;

template <class T>
inline Lanes<T> load_lanes(const T* from) {
  Lanes<T> out;
  std::memcpy(&out, from, sizeof(out));
  return out;
}

template <class V>
inline V lane_max(V a, V b) {
  return a > b ? a : b;
}

// The greatest lane, by halving: each lane against the one half, a quarter, an eighth of the way across.
inline int32_t horizontal_max(Lanes<int32_t> v) {
  using Index = Lanes<int32_t>;
  v = lane_max(v, __builtin_shuffle(v, Index{4, 5, 6, 7, 0, 1, 2, 3}));
  v = lane_max(v, __builtin_shuffle(v, Index{2, 3, 0, 1, 6, 7, 4, 5}));
  return lane_max(v, __builtin_shuffle(v, Index{1, 0, 3, 2, 5, 4, 7, 6}))[0];
}
inline int64_t horizontal_max(Lanes<int64_t> v) {
  using Index = Lanes<int64_t>;
  v = lane_max(v, __builtin_shuffle(v, Index{2, 3, 0, 1}));
  return lane_max(v, __builtin_shuffle(v, Index{1, 0, 3, 2}))[0];
}

// The highest end among the ranges overlapping [candidate, candidate + size), or the candidate.
// Branch-free: every range is tested, in vectors of T lanes with four running maxima.
template <class T>
inline T highest_overlap(T candidate, T limit, const T* __restrict starts, const T* __restrict ends,
                         int64_t count) {
  constexpr int64_t lanes = sizeof(Lanes<T>) / sizeof(T), block = 4 * lanes;
  const Lanes<T> low = Lanes<T>{} + candidate, high = Lanes<T>{} + limit;
  Lanes<T> tops[4] = {low, low, low, low};
  int64_t k = 0;
  for (; k + block <= count; k += block) {
    for (int u = 0; u < 4; ++u) {
      const Lanes<T> start = load_lanes(starts + k + u * lanes), end = load_lanes(ends + k + u * lanes);
      const Lanes<T> reached = (start < high) & (end > low) ? end : low;
      tops[u] = lane_max(tops[u], reached);
    }
  }
  const Lanes<T> most = lane_max(lane_max(tops[0], tops[1]), lane_max(tops[2], tops[3]));
  T top = std::max<T>(candidate, horizontal_max(most));
  for (; k < count; ++k) {
    const bool hit = (starts[k] < limit) & (ends[k] > candidate);
    top = std::max<T>(top, hit ? ends[k] : candidate);
  }
  return top;
}

// Jump the candidate past every range overlapping it, at most `sweeps` times; (candidate, fits).
// No offset below the highest end of the ranges overlapping the candidate fits, so the candidate moves
// there, until none overlaps it. The padded lists make the vector loop run with no scalar tail.
template <class T>
inline std::pair<T, bool> sweep(T size, T alignment, const T* __restrict starts, const T* __restrict ends,
                                int64_t count, T candidate, int64_t sweeps) {
  for (int64_t t = 0; t < sweeps; ++t) {
    const T top = highest_overlap<T>(candidate, static_cast<T>(candidate + size), starts, ends, count);
    if (top == candidate) return {candidate, true};
    candidate = static_cast<T>(align_up(top, alignment));
  }
  return {candidate, false};
}

}  // namespace gp
