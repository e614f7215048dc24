// Kernels of gaplanner/problem/conflicts.py: the pair list of half-open lifetimes, in CSR form.
#include "common.hpp"

namespace {

// Per block, how many later-starting blocks (in `order`, sorted by start) overlap it, counted both ways.
PyObject* interval_degrees(gp::Args& args) {
  auto order = args.array<int64_t>(0, "order");
  auto lower = args.array<int64_t>(1, "lower");
  auto upper = args.array<int64_t>(2, "upper");
  const int64_t n = order.len();
  gp::Array<int64_t> degrees;
  PyObject* result = gp::new_array<int64_t>({n}, &degrees);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  std::fill(degrees.data, degrees.data + n, 0);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t i = order[p];
    for (int64_t q = p + 1; q < n && lower[order[q]] < upper[i]; ++q) {
      ++degrees[i];
      ++degrees[order[q]];
    }
  }
  return result;
}

// The CSR indices for `indptr` (from interval_degrees): each overlapping pair in both rows.
PyObject* interval_fill(gp::Args& args) {
  auto order = args.array<int64_t>(0, "order");
  auto lower = args.array<int64_t>(1, "lower");
  auto upper = args.array<int64_t>(2, "upper");
  auto indptr = args.array<int64_t>(3, "indptr");
  const int64_t n = order.len();
  gp::Array<int32_t> indices;
  PyObject* result = gp::new_array<int32_t>({indptr[indptr.len() - 1]}, &indices);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  std::vector<int64_t> fill(indptr.data, indptr.data + n);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t i = order[p];
    for (int64_t q = p + 1; q < n && lower[order[q]] < upper[i]; ++q) {
      const int64_t j = order[q];
      indices[fill[i]++] = static_cast<int32_t>(j);
      indices[fill[j]++] = static_cast<int32_t>(i);
    }
  }
  return result;
}

}  // namespace

GP_MODULE(_conflicts, "Kernels of gaplanner.problem.conflicts.",
          GP_DEF(interval_degrees, "interval_degrees(order, lower, upper) -> int64 degrees"),
          GP_DEF(interval_fill, "interval_fill(order, lower, upper, indptr) -> int32 indices"))
