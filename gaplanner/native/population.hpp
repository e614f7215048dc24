// A population decode's rows in parallel: chunks c = 0 .. chunks - 1 on the threads, chunk c decoding rows
// c, c + chunks, ... with one workspace (more chunks than threads lets a thread the machine slows down
// hand rows to the others).
#pragma once
#include "common.hpp"

namespace gp {

struct Rows {  // the arguments every population decode shares
  Array<int64_t> orders, prefix, known, offsets;
  int64_t chunks, threads;
};

// Runs make_workspace() once per chunk and decode_row(i, workspace) for its rows; returns the peaks.
template <class MakeWorkspace, class DecodeRow>
PyObject* decode_rows(const Rows& rows, MakeWorkspace&& make_workspace, DecodeRow&& decode_row) {
  Array<int64_t> peaks;
  PyObject* result = new_array<int64_t>({rows.orders.len()}, &peaks);
  if (result == nullptr) return nullptr;
  NoGil released;
  parallel_for(rows.chunks, rows.threads, [&](int64_t c) {
    auto work = make_workspace();
    for (int64_t i = c; i < rows.orders.len(); i += rows.chunks) peaks[i] = decode_row(i, work);
  });
  return result;
}

}  // namespace gp
