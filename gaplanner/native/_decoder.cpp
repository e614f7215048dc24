// Entry points of gaplanner/search/decoder.py: the pair-list decoder's population decode, and its index
// sort (which the tests check on its own).
#include "decoder.hpp"
#include "population.hpp"

namespace {

template <class T>
PyObject* pair_population(gp::Args& args, const gp::Rows& rows) {
  auto sizes = args.array<T>(3, "sizes");
  auto alignments = args.array<T>(4, "alignments");
  auto indptr = args.array<int64_t>(5, "indptr");
  auto indices = args.array<uint32_t>(6, "indices");
  auto pinned = args.array<int64_t>(7, "pinned");
  const bool best_fit = args.flag(8, "best_fit");
  const int64_t index_bits = args.integer(9, "index_bits");
  const T sentinel = static_cast<T>(args.integer(10, "sentinel"));
  return gp::decode_rows(
      rows, [&] { return gp::PairWorkspace<T>(sizes.len(), indptr); },
      [&](int64_t i, gp::PairWorkspace<T>& work) {
        return gp::decode_pair_row<T>(rows.orders.row(i), rows.prefix[i], rows.known.row(i), sizes,
                                      alignments, indptr, indices, pinned, best_fit, index_bits, sentinel,
                                      work, rows.offsets.row(i));
      });
}

// decode_population_into(orders, prefix, known, sizes, alignments, indptr, indices, pinned, best_fit,
// index_bits, sentinel, offsets, chunks, threads) -> peaks; sizes and alignments int32 or int64.
PyObject* decode_population_into(gp::Args& args) {
  gp::Rows rows{args.array<int64_t>(0, "orders"), args.array<int64_t>(1, "prefix"),
                args.array<int64_t>(2, "known"), args.array<int64_t>(11, "offsets", true),
                args.integer(12, "chunks"), args.integer(13, "threads")};
  if (args.is<int32_t>(3)) return pair_population<int32_t>(args, rows);
  return pair_population<int64_t>(args, rows);
}

template <class T>
PyObject* sort_indices_of(gp::Args& args) {
  auto index = args.array<int64_t>(0, "index", true);
  const int64_t count = args.integer(1, "count");
  auto keys = args.array<T>(2, "keys");
  const int64_t index_bits = args.integer(3, "index_bits");
  std::vector<int64_t> spare(count), buckets(count), firsts;
  gp::sort_indices<T>(index.data, count, keys.data, index_bits, spare.data(), buckets.data(), firsts);
  Py_RETURN_NONE;
}

// sort_indices(index, count, keys, index_bits): index[:count] sorted in place by keys[index].
PyObject* sort_indices(gp::Args& args) {
  return args.is<int32_t>(2) ? sort_indices_of<int32_t>(args) : sort_indices_of<int64_t>(args);
}

}  // namespace

GP_MODULE(_decoder, "Kernels of gaplanner.search.decoder (the pair-list decoder).",
          GP_DEF(decode_population_into,
                 "decode_population_into(orders, prefix, known, sizes, alignments, indptr, indices, pinned, "
                 "best_fit, index_bits, sentinel, offsets, chunks, threads) -> peaks"),
          GP_DEF(sort_indices, "sort_indices(index, count, keys, index_bits): index[:count] by keys[index]"))
