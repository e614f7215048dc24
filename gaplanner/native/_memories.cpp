// Kernels of gaplanner/search/memories/decoder.py: orders placed across several memories.
#include "common.hpp"

namespace {

// Lowest aligned offset where [offset, offset + size) meets none of the `count` ranges.
int64_t first_fit(int64_t size, int64_t alignment, const int64_t* starts, const int64_t* ends, int64_t count,
                  std::vector<int64_t>& order) {
  order.resize(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return starts[a] < starts[b]; });
  int64_t candidate = 0;
  for (int64_t k : order) {
    if (starts[k] >= candidate + size) break;
    if (ends[k] > candidate) candidate = gp::floor_div(ends[k] + alignment - 1, alignment) * alignment;
  }
  return candidate;
}

struct MemoryModel {
  gp::Array<int64_t> sizes, alignments, capacities, indptr, indices;  // alignments: (blocks, memories)
  gp::Array<bool> allowed;                                            // (blocks, memories)
  gp::Array<int64_t> pinned_memory, pinned_offset;
};

bool allowed_everywhere(const MemoryModel& m, int64_t b) {
  for (int64_t k = 0; k < m.allowed.shape[1]; ++k) {
    if (!m.allowed(b, k)) return false;
  }
  return true;
}

// Place the blocks of `order` (see the module docstring); return whether every block fits.
bool decode_row(const MemoryModel& m, const int64_t* order, int64_t* memory_of, int64_t* offsets, int64_t* peaks) {
  const int64_t n = m.sizes.len(), memories = m.capacities.len();
  std::fill(memory_of, memory_of + n, -1);
  std::fill(peaks, peaks + memories, 0);
  int64_t width = 1;
  for (int64_t b = 0; b < n; ++b) width = std::max(width, m.indptr[b + 1] - m.indptr[b]);
  std::vector<int64_t> starts(static_cast<size_t>(width)), ends(static_cast<size_t>(width)), sorted;
  for (int64_t b = 0; b < n; ++b) {
    if (m.pinned_offset[b] >= 0) {
      const int64_t k = std::max<int64_t>(m.pinned_memory[b], 0);
      memory_of[b] = k, offsets[b] = m.pinned_offset[b];
      peaks[k] = std::max(peaks[k], offsets[b] + m.sizes[b]);
    }
  }
  for (int64_t p = 0; p < 2 * n; ++p) {  // blocks restricted to some memories first: they have fewer to go to
    const int64_t b = order[p % n];
    if (memory_of[b] >= 0 || (p < n) == allowed_everywhere(m, b)) continue;
    for (int64_t k = 0; k < memories; ++k) {
      if (!m.allowed(b, k) || (m.capacities[k] >= 0 && m.sizes[b] > m.capacities[k])) continue;
      int64_t count = 0;
      for (int64_t e = m.indptr[b]; e < m.indptr[b + 1]; ++e) {
        const int64_t j = m.indices[e];
        if (memory_of[j] == k) {
          starts[count] = offsets[j], ends[count] = offsets[j] + m.sizes[j];
          ++count;
        }
      }
      const int64_t offset = first_fit(m.sizes[b], m.alignments(b, k), starts.data(), ends.data(), count, sorted);
      if (m.capacities[k] < 0 || offset + m.sizes[b] <= m.capacities[k]) {
        memory_of[b] = k, offsets[b] = offset;
        peaks[k] = std::max(peaks[k], offset + m.sizes[b]);
        break;
      }
    }
    if (memory_of[b] < 0) return false;
  }
  return true;
}

// decode_population(orders, sizes, alignments, capacities, indptr, indices, allowed, pinned_memory,
// pinned_offset, memory_of, offsets, peaks, feasible, threads): every row, in parallel.
PyObject* decode_population(gp::Args& args) {
  auto orders = args.array<int64_t>(0, "orders");
  MemoryModel model{args.array<int64_t>(1, "sizes"),         args.array<int64_t>(2, "alignments"),
                    args.array<int64_t>(3, "capacities"),    args.array<int64_t>(4, "indptr"),
                    args.array<int64_t>(5, "indices"),       args.array<bool>(6, "allowed"),
                    args.array<int64_t>(7, "pinned_memory"), args.array<int64_t>(8, "pinned_offset")};
  auto memory_of = args.array<int64_t>(9, "memory_of", true);
  auto offsets = args.array<int64_t>(10, "offsets", true);
  auto peaks = args.array<int64_t>(11, "peaks", true);
  auto feasible = args.array<bool>(12, "feasible", true);
  const int64_t threads = args.integer(13, "threads");
  {
    gp::NoGil released;
    gp::parallel_for(orders.len(), threads, [&](int64_t i) {
      feasible[i] = decode_row(model, orders.row(i), memory_of.row(i), offsets.row(i), peaks.row(i));
    });
  }
  Py_RETURN_NONE;
}

}  // namespace

GP_MODULE(_memories, "Kernels of gaplanner.search.memories.decoder.",
          GP_DEF(decode_population,
                 "decode_population(orders, sizes, alignments, capacities, indptr, indices, allowed, "
                 "pinned_memory, pinned_offset, memory_of, offsets, peaks, feasible, threads)"))
