// Entry points of gaplanner/search/order_decoder.py: a population decoded from happens-before vectors.
#include "order_decoder.hpp"
#include "population.hpp"

namespace {

// decode_order_population(orders, prefix, known, sizes, alignments, index, pinned, best_fit, offsets,
// chunks, threads) -> peaks; index: OrderIndex.arrays().
PyObject* decode_order_population(gp::Args& args) {
  gp::Rows rows{args.array<int64_t>(0, "orders"), args.array<int64_t>(1, "prefix"),
                args.array<int64_t>(2, "known"), args.array<int64_t>(8, "offsets", true),
                args.integer(9, "chunks"), args.integer(10, "threads")};
  auto sizes = args.array<int64_t>(3, "sizes");
  auto alignments = args.array<int64_t>(4, "alignments");
  const gp::OrderIndex index = gp::read_order_index(args, 5);
  auto pinned = args.array<int64_t>(6, "pinned");
  const bool best_fit = args.flag(7, "best_fit");
  const int64_t width = rows.orders.ndim == 2 ? rows.orders.shape[1] : 0;
  return gp::decode_rows(
      rows, [&] { return gp::RankWorkspace(sizes.len(), index.groups.shape[1]); },
      [&](int64_t i, gp::RankWorkspace& work) {
        return gp::decode_order_row(rows.orders.row(i), width, rows.prefix[i], rows.known.row(i), sizes,
                                    alignments, index, pinned, best_fit, work, rows.offsets.row(i));
      });
}

}  // namespace

GP_MODULE(_order_decoder, "Kernels of gaplanner.search.order_decoder (decoding from happens-before vectors).",
          GP_DEF(decode_order_population,
                 "decode_order_population(orders, prefix, known, sizes, alignments, index, pinned, best_fit, "
                 "offsets, chunks, threads) -> peaks"))
