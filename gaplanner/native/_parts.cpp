// Kernels of gaplanner/search/exact/parts.py: the conflict graph's components, and a part's own conflicts.
#include "common.hpp"

namespace {

// Per block, its connected component of the conflict graph (CSR), numbered in order of first block.
template <class I>
PyObject* component_labels_of(gp::Args& args) {
  auto indptr = args.array<int64_t>(0, "indptr");
  auto indices = args.array<I>(1, "indices");
  const int64_t n = indptr.len() - 1;
  gp::Array<int64_t> label;
  PyObject* result = gp::new_array<int64_t>({std::max<int64_t>(n, 0)}, &label);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  std::fill(label.data, label.data + n, -1);
  std::vector<int64_t> stack(static_cast<size_t>(std::max<int64_t>(n, 0)));
  int64_t count = 0;
  for (int64_t start = 0; start < n; ++start) {
    if (label[start] >= 0) continue;
    label[start] = count;
    int64_t top = 1;
    stack[0] = start;
    while (top) {
      const int64_t b = stack[--top];
      for (int64_t e = indptr[b]; e < indptr[b + 1]; ++e) {
        const int64_t x = indices[e];
        if (label[x] < 0) {
          label[x] = count;
          stack[top++] = x;
        }
      }
    }
    ++count;
  }
  return result;
}

PyObject* component_labels(gp::Args& args) {
  return args.is<int32_t>(1) ? component_labels_of<int32_t>(args) : component_labels_of<int64_t>(args);
}

// The conflicts of `blocks` (CSR), in their local indices (`local`, per problem block), each row sorted.
template <class I>
PyObject* local_neighbours_of(gp::Args& args) {
  auto blocks = args.array<int64_t>(0, "blocks");
  auto local = args.array<int64_t>(1, "local");
  auto indptr = args.array<int64_t>(2, "indptr");
  auto indices = args.array<I>(3, "indices");
  const int64_t n = blocks.len();
  gp::Array<int64_t> ptr, idx;
  PyObject* ptr_array = gp::new_array<int64_t>({n + 1}, &ptr);
  if (ptr_array == nullptr) return nullptr;
  ptr[0] = 0;
  for (int64_t i = 0; i < n; ++i) ptr[i + 1] = ptr[i] + indptr[blocks[i] + 1] - indptr[blocks[i]];
  PyObject* idx_array = gp::new_array<int64_t>({ptr[n]}, &idx);
  if (idx_array == nullptr) {
    Py_DECREF(ptr_array);
    return nullptr;
  }
  {
    gp::NoGil released;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t start = indptr[blocks[i]];
      for (int64_t e = start; e < indptr[blocks[i] + 1]; ++e) idx[ptr[i] + e - start] = local[indices[e]];
      std::sort(idx.data + ptr[i], idx.data + ptr[i + 1]);
    }
  }
  return Py_BuildValue("(NN)", ptr_array, idx_array);
}

PyObject* local_neighbours(gp::Args& args) {
  return args.is<int32_t>(3) ? local_neighbours_of<int32_t>(args) : local_neighbours_of<int64_t>(args);
}

}  // namespace

GP_MODULE(_parts, "Kernels of gaplanner.search.exact.parts.",
          GP_DEF(component_labels, "component_labels(indptr, indices) -> int64 label per block"),
          GP_DEF(local_neighbours, "local_neighbours(blocks, local, indptr, indices) -> (int64 ptr, int64 idx)"))
