// Kernels of gaplanner/problem/order.py: the chains of an OrderIndex, and the conflicts found from the
// happens-before vectors (degrees, the pair list, the greatest value over a block's conflicts).
#include "order.hpp"

namespace {

// chains(acquire, order, max_chains) -> chain: greedy chains of acquire in `order` (a linear extension):
// each point joins the first chain whose last point it is at or above in every component; -1 when it
// fits none of max_chains.
PyObject* chains(gp::Args& args) {
  auto acquire = args.array<int64_t>(0, "acquire");
  auto order = args.array<int64_t>(1, "order");
  const int64_t max_chains = args.integer(2, "max_chains");
  const int64_t n = acquire.len(), k = acquire.shape[1];
  gp::Array<int64_t> chain;
  PyObject* result = gp::new_array<int64_t>({n}, &chain);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  std::fill(chain.data, chain.data + n, -1);
  std::vector<int64_t> tails(static_cast<size_t>(std::max<int64_t>(max_chains, 0)));
  int64_t count = 0;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t b = order[p];
    for (int64_t c = 0; c < count; ++c) {
      const int64_t t = tails[c];
      bool fits = true;
      for (int64_t i = 0; i < k; ++i) fits &= acquire(t, i) <= acquire(b, i);
      if (fits) {
        chain[b] = c, tails[c] = b;
        break;
      }
    }
    if (chain[b] < 0 && count < max_chains) chain[b] = count, tails[count++] = b;
  }
  return result;
}

// Calls visit(b, r) for every rank r conflicting with rank s (block b), in order of group then rank.
template <class Visit>
void each_rank(const gp::OrderIndex& index, Visit&& visit) {
  const int64_t n = index.rank.len(), groups = index.groups.shape[1];
  gp::Buffer<int64_t> buffer(2, groups);
  gp::Array<int64_t> runs = buffer;
  std::vector<int64_t> block_of(n);
  for (int64_t b = 0; b < n; ++b) block_of[index.rank[b]] = b;
  for (int64_t s = 0; s < n; ++s) {  // in order of rank: the runs of one query are near the last one's
    gp::order_runs(s, index, runs);
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t r = runs(0, g); r < runs(1, g); ++r) {
        if (r != s && gp::conflict(index.release, index.acquire, r, s)) visit(block_of[s], r);
      }
    }
  }
}

// each_conflict(index, fill, indptr, values, out) -> degrees: per block its conflict count, and with
// `fill` its neighbours written into out from indptr (values: what to write per rank), each row sorted.
PyObject* each_conflict(gp::Args& args) {
  const gp::OrderIndex index = gp::read_order_index(args, 0);
  const bool fill = args.flag(1, "fill");
  auto indptr = args.array<int64_t>(2, "indptr");
  auto values = args.array<int32_t>(3, "values");
  auto out = args.array<int32_t>(4, "out", true);
  const int64_t n = index.rank.len();
  gp::Array<int64_t> degrees;
  PyObject* result = gp::new_array<int64_t>({n}, &degrees);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  std::fill(degrees.data, degrees.data + n, 0);
  each_rank(index, [&](int64_t b, int64_t r) {
    if (fill) out[indptr[b] + degrees[b]] = values[r];
    ++degrees[b];
  });
  if (fill) {
    for (int64_t b = 0; b < n; ++b) std::sort(out.data + indptr[b], out.data + indptr[b] + degrees[b]);
  }
  return result;
}

// greatest_conflicting(index, values, floor) -> (degrees, greatest): per block its conflict count and the
// greatest of `values` over the blocks it conflicts with, or `floor` where none is greater, in one pass.
PyObject* greatest_conflicting(gp::Args& args) {
  const gp::OrderIndex index = gp::read_order_index(args, 0);
  auto values = args.array<int64_t>(1, "values");
  auto floor = args.array<int64_t>(2, "floor");
  const int64_t n = index.rank.len();
  gp::Array<int64_t> degrees, greatest;
  PyObject* counted = gp::new_array<int64_t>({n}, &degrees);
  PyObject* found = counted ? gp::new_array<int64_t>({floor.len()}, &greatest) : nullptr;
  if (found == nullptr) {
    Py_XDECREF(counted);
    return nullptr;
  }
  {
    gp::NoGil released;
    std::vector<int64_t> by_rank(n);
    for (int64_t b = 0; b < n; ++b) by_rank[index.rank[b]] = values[b];
    std::copy(floor.data, floor.data + floor.len(), greatest.data);
    std::fill(degrees.data, degrees.data + n, 0);
    each_rank(index, [&](int64_t b, int64_t r) {
      ++degrees[b];
      greatest[b] = std::max(greatest[b], by_rank[r]);
    });
  }
  return Py_BuildValue("(NN)", counted, found);
}

}  // namespace

GP_MODULE(_order, "Kernels of gaplanner.problem.order (conflicts from happens-before vectors).",
          GP_DEF(chains, "chains(acquire, order, max_chains) -> int64 chain per point (-1: none)"),
          GP_DEF(each_conflict, "each_conflict(index, fill, indptr, values, out) -> int64 degrees"),
          GP_DEF(greatest_conflicting, "greatest_conflicting(index, values, floor) -> (degrees, greatest)"))
