// Kernels of gaplanner/search/fitness.py: every order of a population decoded, re-sorted by address and
// scored (peak, excess above the lower bound, contiguity of reuse), in parallel chunks of rows.
// The excess is summed in numba's order and rounding: no fused multiply-adds.
#pragma GCC optimize("fp-contract=off")
#include "decoder.hpp"
#include "interval_decoder.hpp"

namespace {

// What contiguity reads: fitness.py's contiguity_args (sizes, interval, lower, upper, indptr, sorted).
struct Contiguity {
  gp::Array<int64_t> sizes, lower, upper, indptr;
  gp::Array<int32_t> sorted_indices;
  bool interval;

  // Whether a and b conflict: their lifetimes overlap, or b is in a's sorted neighbour row.
  bool conflict(int64_t a, int64_t b) const {
    if (interval) return lower[a] < upper[b] && lower[b] < upper[a];
    const int32_t* first = sorted_indices.data + indptr[a];
    const int32_t* last = sorted_indices.data + indptr[a + 1];
    const int32_t* k = std::lower_bound(first, last, b, [](int32_t x, int64_t y) { return x < y; });
    return k < last && *k == b;
  }

  // Share of adjacent pairs of seq (blocks by address) in a reuse relation: not conflicting, the later
  // block not larger than the earlier one, so it can sit in the space the earlier one held.
  double share(const int64_t* seq, int64_t n) const {
    if (n < 2) return 0.0;
    int64_t reuse = 0;
    for (int64_t p = 0; p + 1 < n; ++p) {
      const int64_t a = seq[p], b = seq[p + 1];
      reuse += sizes[b] <= sizes[a] && !conflict(a, b);
    }
    return static_cast<double>(reuse) / static_cast<double>(n - 1);
  }
};

Contiguity read_contiguity(gp::Args& args, Py_ssize_t i) {
  PyObject* tuple = args.object(i, "contiguity_args");
  if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 6) {
    args.fail("contiguity_args", "must be a 6-tuple");
  }
  const int interval = PyObject_IsTrue(PyTuple_GET_ITEM(tuple, 1));
  if (interval < 0) {
    PyErr_Clear();
    args.fail("contiguity_args", "must hold a flag second");
  }
  return Contiguity{args.item<int64_t>(i, 0, "contiguity_args"), args.item<int64_t>(i, 2, "contiguity_args"),
                    args.item<int64_t>(i, 3, "contiguity_args"), args.item<int64_t>(i, 4, "contiguity_args"),
                    args.item<int32_t>(i, 5, "contiguity_args"), interval != 0};
}

// Write `order` stably sorted by offsets into out. A child's order is its parent's address order with a
// few genes moved, so it is nearly sorted by its own offsets: insertion sort runs in close to linear time
// there. Orders far from sorted (random ones) fall back to a merge sort once the moves pass a linear budget.
void sort_by_address(const int64_t* order, const int64_t* offsets, int64_t* out, int64_t n,
                     std::vector<int64_t>& keys) {
  keys.resize(static_cast<size_t>(n));
  int64_t budget = 16 * n;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t b = order[k], key = offsets[b];
    int64_t j = k;
    while (j > 0 && keys[j - 1] > key) {
      keys[j] = keys[j - 1];
      out[j] = out[j - 1];
      --j;
    }
    keys[j] = key, out[j] = b;
    budget -= k - j;
    if (budget < 0) {
      std::copy(order, order + n, out);
      std::stable_sort(out, out + n, [&](int64_t x, int64_t y) { return offsets[x] < offsets[y]; });
      return;
    }
  }
}

// The scoring arguments every kernel shares (after its decoding ones).
struct Scoring {
  gp::Array<int64_t> orders, offsets, by_address;
  gp::Array<double> durations, excess, contiguity;
  int64_t floor;
  Contiguity reuse;
  bool use_contiguity;
  int64_t chunks, threads;

  // Re-sort row i by address; its bytes above the floor weighted by lifetime; its contiguity.
  template <class S>
  void score_row(int64_t i, const gp::Array<S>& sizes, std::vector<int64_t>& keys) const {
    const int64_t n = offsets.shape[1];
    const int64_t* row = offsets.row(i);
    sort_by_address(orders.row(i), row, by_address.row(i), n, keys);
    double above = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      const int64_t end = row[b] + static_cast<int64_t>(sizes[b]);
      if (end > floor) {
        above += static_cast<double>(end - std::max(row[b], floor)) * durations[b];
      }
    }
    excess[i] = above;
    if (use_contiguity) contiguity[i] = reuse.share(by_address.row(i), n);
  }

  // Runs decode_row(i, workspace) then score_row for each row, chunk by chunk.
  template <class S, class MakeWorkspace, class DecodeRow>
  void run(const gp::Array<S>& sizes, MakeWorkspace&& make_workspace, DecodeRow&& decode_row) const {
    gp::NoGil released;
    gp::parallel_for(chunks, threads, [&](int64_t c) {
      auto work = make_workspace();
      std::vector<int64_t> keys;
      for (int64_t i = c; i < orders.len(); i += chunks) {
        decode_row(i, work);
        score_row(i, sizes, keys);
      }
    });
  }
};

template <class T>
PyObject* score_pairs_of(gp::Args& args) {
  auto orders = args.array<int64_t>(0, "orders");
  auto prefix = args.array<int64_t>(1, "prefix");
  auto known = args.array<int64_t>(2, "known");
  auto sizes = args.array<T>(3, "sizes");
  auto alignments = args.array<T>(4, "alignments");
  auto indptr = args.array<int64_t>(5, "indptr");
  auto indices = args.array<uint32_t>(6, "indices");
  auto pinned = args.array<int64_t>(7, "pinned");
  const int64_t index_bits = args.integer(8, "index_bits");
  const T sentinel = static_cast<T>(args.integer(9, "sentinel"));
  const bool first_fit = args.flag(10, "first_fit");
  auto offsets = args.array<int64_t>(16, "offsets", true);
  auto peaks = args.array<int64_t>(17, "peaks", true);
  Scoring scoring{orders, offsets, args.array<int64_t>(15, "by_address", true),
                  args.array<double>(11, "durations"), args.array<double>(18, "excess", true),
                  args.array<double>(19, "contiguity", true), args.integer(12, "floor"),
                  read_contiguity(args, 13), args.flag(14, "use_contiguity"),
                  args.integer(20, "chunks"), args.integer(21, "threads")};
  scoring.run(
      sizes, [&] { return gp::PairWorkspace<T>(sizes.len(), indptr); },
      [&](int64_t i, gp::PairWorkspace<T>& work) {
        peaks[i] = gp::decode_pair_row<T>(orders.row(i), prefix[i], known.row(i), sizes, alignments, indptr,
                                          indices, pinned, !first_fit, index_bits, sentinel, work,
                                          offsets.row(i));
      });
  Py_RETURN_NONE;
}

// score_pairs(orders, prefix, known, sizes, alignments, indptr, indices, pinned, index_bits, sentinel,
// first_fit, durations, floor, contiguity_args, use_contiguity, by_address, offsets, peaks, excess,
// contiguity, chunks, threads): decode each order from the pair list, re-sort it by address and score it.
//
// Re-sorting by address is the reuse-ordering step "pre-allocate, then sort by start address". First-fit
// decoding of the re-sorted order gives every block the offset it had (each block's blockers lie below
// it, so they still come first), so an individual's stored offsets are exactly those of its stored order,
// which lets a child be decoded from where it departs from its parent.
PyObject* score_pairs(gp::Args& args) {
  return args.is<int32_t>(3) ? score_pairs_of<int32_t>(args) : score_pairs_of<int64_t>(args);
}

// score_lifetimes(orders, prefix, known, sizes, alignments, intervals, pinned, first_fit, durations, floor,
// contiguity_args, use_contiguity, by_address, offsets, peaks, excess, contiguity, chunks, threads):
// score_pairs for a decoder that places from the lifetimes (intervals: its index arrays).
PyObject* score_lifetimes(gp::Args& args) {
  auto orders = args.array<int64_t>(0, "orders");
  auto prefix = args.array<int64_t>(1, "prefix");
  auto known = args.array<int64_t>(2, "known");
  auto sizes = args.array<int64_t>(3, "sizes");
  auto alignments = args.array<int64_t>(4, "alignments");
  const gp::IntervalIndex index = gp::read_interval_index(args, 5);
  auto pinned = args.array<int64_t>(6, "pinned");
  const bool first_fit = args.flag(7, "first_fit");
  auto offsets = args.array<int64_t>(13, "offsets", true);
  auto peaks = args.array<int64_t>(14, "peaks", true);
  Scoring scoring{orders, offsets, args.array<int64_t>(12, "by_address", true),
                  args.array<double>(8, "durations"), args.array<double>(15, "excess", true),
                  args.array<double>(16, "contiguity", true), args.integer(9, "floor"),
                  read_contiguity(args, 10), args.flag(11, "use_contiguity"),
                  args.integer(17, "chunks"), args.integer(18, "threads")};
  const int64_t width = orders.shape[1];
  scoring.run(
      sizes, [&] { return gp::RankWorkspace(sizes.len(), index.classes.shape[1]); },
      [&](int64_t i, gp::RankWorkspace& work) {
        peaks[i] = gp::decode_interval_row(orders.row(i), width, prefix[i], known.row(i), sizes, alignments,
                                           index, pinned, !first_fit, work, offsets.row(i));
      });
  Py_RETURN_NONE;
}

// score_decoded(orders, offsets, sizes, durations, floor, contiguity_args, use_contiguity, by_address,
// excess, contiguity, chunks, threads): score rows decoded already (by the multi-core decoder without
// pairs), as score_pairs does.
PyObject* score_decoded(gp::Args& args) {
  auto orders = args.array<int64_t>(0, "orders");
  auto offsets = args.array<int64_t>(1, "offsets");
  auto sizes = args.array<int64_t>(2, "sizes");
  Scoring scoring{orders, offsets, args.array<int64_t>(7, "by_address", true),
                  args.array<double>(3, "durations"), args.array<double>(8, "excess", true),
                  args.array<double>(9, "contiguity", true), args.integer(4, "floor"),
                  read_contiguity(args, 5), args.flag(6, "use_contiguity"),
                  args.integer(10, "chunks"), args.integer(11, "threads")};
  scoring.run(sizes, [] { return 0; }, [](int64_t, int) {});
  Py_RETURN_NONE;
}

// sort_by_address(order, offsets, out): order stably sorted by offsets, into out.
PyObject* sort_by_address(gp::Args& args) {
  auto order = args.array<int64_t>(0, "order");
  auto offsets = args.array<int64_t>(1, "offsets");
  auto out = args.array<int64_t>(2, "out", true);
  std::vector<int64_t> keys;
  sort_by_address(order.data, offsets.data, out.data, order.len(), keys);
  Py_RETURN_NONE;
}

}  // namespace

GP_MODULE(_fitness, "Kernels of gaplanner.search.fitness (decode, re-sort by address, score).",
          GP_DEF(score_pairs,
                 "score_pairs(orders, prefix, known, sizes, alignments, indptr, indices, pinned, index_bits, "
                 "sentinel, first_fit, durations, floor, contiguity_args, use_contiguity, by_address, "
                 "offsets, peaks, excess, contiguity, chunks, threads)"),
          GP_DEF(score_lifetimes,
                 "score_lifetimes(orders, prefix, known, sizes, alignments, intervals, pinned, first_fit, "
                 "durations, floor, contiguity_args, use_contiguity, by_address, offsets, peaks, excess, "
                 "contiguity, chunks, threads)"),
          GP_DEF(score_decoded,
                 "score_decoded(orders, offsets, sizes, durations, floor, contiguity_args, use_contiguity, "
                 "by_address, excess, contiguity, chunks, threads)"),
          GP_DEF(sort_by_address, "sort_by_address(order, offsets, out): order stably sorted by offsets"))
