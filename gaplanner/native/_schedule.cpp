// Kernels of gaplanner/schedule/ (memory.py, bounds.py, exact.py, kernels.py): the order search's
// scores, its moves, its bounds and its exact parts.
#include <cmath>
#include <tuple>
#include <unordered_map>

#include "common.hpp"

namespace {

// ---- numba's NumPy random stream (MT19937 seeded as numba_rnd_init), so a seed gives the same moves --------

class NumbaRandom {
 public:
  explicit NumbaRandom(uint32_t seed) {
    for (uint32_t pos = 0; pos < N; ++pos) {
      mt_[pos] = seed;
      seed = 1812433253U * (seed ^ (seed >> 30)) + pos + 1;
    }
    index_ = N;
  }

  uint32_t next32() {
    if (index_ >= N) shuffle();
    uint32_t y = mt_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= y >> 18;
    return y;
  }

  // np.random.random(): 53 bits from two draws.
  double random() {
    const uint32_t a = next32() >> 5, b = next32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  // np.random.randint(low, high) for int64 bounds: the last bits of each draw, rejection above the range.
  int64_t randint(int64_t low, int64_t high) {
    const int64_t n = high - low;
    if (n == 1) return low;
    const int nbits = 64 - __builtin_clzll(static_cast<uint64_t>(n - 1));
    while (true) {
      uint64_t r;
      if (nbits <= 32) {
        r = next32() & (0xffffffffU >> (32 - nbits));
      } else {
        const uint64_t high_bits = next32() & (0xffffffffU >> (64 - nbits));
        const uint64_t low_bits = next32();
        r = low_bits | (high_bits << 32);
      }
      if (static_cast<int64_t>(r) < n) return low + static_cast<int64_t>(r);
    }
  }

  double exponential(double scale) { return -std::log(1.0 - random()) * scale; }

 private:
  static constexpr uint32_t N = 624, M = 397;
  void shuffle() {
    auto twist = [this](uint32_t i, uint32_t next, uint32_t far) {
      const uint32_t y = (mt_[i] & 0x80000000U) | (mt_[next] & 0x7fffffffU);
      mt_[i] = mt_[far] ^ (y >> 1) ^ ((0U - (y & 1U)) & 0x9908b0dfU);
    };
    uint32_t i = 0;
    for (; i < N - M; ++i) twist(i, i + 1, i + M);
    for (; i < N - 1; ++i) twist(i, i + 1, i + M - N);
    twist(N - 1, 0, M - 1);
    index_ = 0;
  }
  uint32_t mt_[N];
  uint32_t index_;
};

// ---- memory.py: an order's live bytes ---------------------------------------------------------------------

struct Model {  // LoadModel.args()
  gp::Array<int64_t> sizes, acc_ptr, acc_op;
  gp::Array<bool> from_start, kept;
  gp::Array<int64_t> ip_op, ip_size, ip_ptr, ip_host;
};

Model read_model(gp::Args& args, Py_ssize_t i) {
  return Model{args.item<int64_t>(i, 0, "model"), args.item<int64_t>(i, 1, "model"),
               args.item<int64_t>(i, 2, "model"), args.item<bool>(i, 3, "model"),
               args.item<bool>(i, 4, "model"),    args.item<int64_t>(i, 5, "model"),
               args.item<int64_t>(i, 6, "model"), args.item<int64_t>(i, 7, "model"),
               args.item<int64_t>(i, 8, "model")};
}

// load[p]: bytes live at position p (n: after the last operator), less in-place savings.
void live_bytes(const int64_t* pos, int64_t n, const Model& m, int64_t* load, int64_t* last) {
  std::fill(load, load + n + 1, 0);
  for (int64_t b = 0; b < m.sizes.len(); ++b) {
    int64_t lo = n, hi = -1;
    for (int64_t e = m.acc_ptr[b]; e < m.acc_ptr[b + 1]; ++e) {
      const int64_t p = pos[m.acc_op[e]];
      lo = std::min(lo, p);
      hi = std::max(hi, p);
    }
    if (m.from_start[b]) lo = 0;
    if (m.kept[b]) hi = n;
    last[b] = hi;
    load[lo] += m.sizes[b];
    if (hi + 1 <= n) load[hi + 1] -= m.sizes[b];
  }
  for (int64_t c = 0; c < m.ip_op.len(); ++c) {
    const int64_t p = pos[m.ip_op[c]];
    for (int64_t e = m.ip_ptr[c]; e < m.ip_ptr[c + 1]; ++e) {
      if (last[m.ip_host[e]] == p) {
        load[p] -= m.ip_size[c];
        if (p + 1 <= n) load[p + 1] += m.ip_size[c];
        break;
      }
    }
  }
  int64_t running = 0;
  for (int64_t p = 0; p <= n; ++p) {
    running += load[p];
    load[p] = running;
  }
}

std::pair<int64_t, int64_t> peak_and_count(const int64_t* load, int64_t length) {
  int64_t peak = load[0], count = 0;
  for (int64_t p = 0; p < length; ++p) {
    if (load[p] > peak) {
      peak = load[p], count = 1;
    } else if (load[p] == peak) {
      ++count;
    }
  }
  return {peak, count};
}

int64_t argmax(const int64_t* values, int64_t length) {
  return std::max_element(values, values + length) - values;
}

// profile(pos, n, model, load, last): LoadModel.profile's work, into load.
PyObject* profile(gp::Args& args) {
  auto pos = args.array<int64_t>(0, "pos");
  const int64_t n = args.integer(1, "n");
  Model model = read_model(args, 2);
  auto load = args.array<int64_t>(3, "load", true);
  auto last = args.array<int64_t>(4, "last", true);
  {
    gp::NoGil released;
    live_bytes(pos.data, n, model, load.data, last.data);
  }
  Py_RETURN_NONE;
}

// ---- bounds.py: bytes surely live at each operator in every order ----------------------------------------

PyObject* surely_live(gp::Args& args) {
  auto topo = args.array<int64_t>(0, "topo");
  auto pred_ptr = args.array<int64_t>(1, "pred_ptr");
  auto pred_idx = args.array<int64_t>(2, "pred_idx");
  auto succ_ptr = args.array<int64_t>(3, "succ_ptr");
  auto succ_idx = args.array<int64_t>(4, "succ_idx");
  auto acc_ptr = args.array<int64_t>(5, "acc_ptr");
  auto acc_op = args.array<int64_t>(6, "acc_op");
  auto sizes = args.array<int64_t>(7, "sizes");
  auto from_start = args.array<bool>(8, "from_start");
  auto kept = args.array<bool>(9, "kept");
  const int64_t words = args.integer(10, "chunk_words");
  const int64_t n = topo.len();
  gp::Array<int64_t> load, related;
  PyObject* load_array = gp::new_array<int64_t>({n}, &load);
  if (load_array == nullptr) return nullptr;
  PyObject* related_array = gp::new_array<int64_t>({n}, &related);
  if (related_array == nullptr) {
    Py_DECREF(load_array);
    return nullptr;
  }
  {
    gp::NoGil released;
    std::fill(load.data, load.data + n, 0);
    std::fill(related.data, related.data + n, 0);  // ancestors + descendants, self counted twice
    const int64_t chunk = words * 64;
    std::vector<uint64_t> desc(static_cast<size_t>(n * words)), anc(static_cast<size_t>(n * words));
    std::vector<uint64_t> d_row(static_cast<size_t>(words)), a_row(static_cast<size_t>(words));
    auto row = [words](std::vector<uint64_t>& table, int64_t u) { return table.data() + u * words; };
    auto spread = [&](std::vector<uint64_t>& table, int64_t p, int64_t u, int64_t c0, int64_t c1,
                      const gp::Array<int64_t>& ptr, const gp::Array<int64_t>& idx) {
      uint64_t* own = row(table, u);
      std::fill(own, own + words, 0);
      if (c0 <= p && p < c1) own[(p - c0) >> 6] |= uint64_t{1} << ((p - c0) & 63);
      for (int64_t e = ptr[u]; e < ptr[u + 1]; ++e) {
        const uint64_t* other = row(table, idx[e]);
        for (int64_t w = 0; w < words; ++w) own[w] |= other[w];
      }
    };
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
      const int64_t c1 = std::min(n, c0 + chunk);
      for (int64_t p = n - 1; p >= 0; --p) spread(desc, p, topo[p], c0, c1, succ_ptr, succ_idx);
      for (int64_t p = 0; p < n; ++p) spread(anc, p, topo[p], c0, c1, pred_ptr, pred_idx);
      for (int64_t u = 0; u < n; ++u) {
        for (int64_t w = 0; w < words; ++w)
          related[u] += __builtin_popcountll(row(desc, u)[w]) + __builtin_popcountll(row(anc, u)[w]);
      }
      for (int64_t b = 0; b < sizes.len(); ++b) {
        std::fill(d_row.begin(), d_row.end(), from_start[b] ? ~uint64_t{0} : 0);
        std::fill(a_row.begin(), a_row.end(), kept[b] ? ~uint64_t{0} : 0);
        for (int64_t e = acc_ptr[b]; e < acc_ptr[b + 1]; ++e) {
          for (int64_t w = 0; w < words; ++w) {
            d_row[w] |= row(desc, acc_op[e])[w];
            a_row[w] |= row(anc, acc_op[e])[w];
          }
        }
        for (int64_t w = 0; w < words; ++w) {
          for (uint64_t word = d_row[w] & a_row[w]; word; word &= word - 1) {
            const int64_t p = c0 + 64 * w + __builtin_ctzll(word);
            if (p < c1) load[topo[p]] += sizes[b];
          }
        }
      }
    }
  }
  return Py_BuildValue("(NN)", load_array, related_array);
}

// ---- exact.py: dynamic programming over the down-sets of one part ----------------------------------------

// The down-sets met so far, each to its slot: open addressing on the set's bits, grown as sets come (a
// part of a few operators meets a few sets, so nothing is sized by the state budget up front).
class StateIndex {
 public:
  StateIndex() : keys_(64, EMPTY), slots_(64) {}

  int64_t find(int64_t set) const {  // the set's slot, or -1
    for (size_t at = home(set);; at = (at + 1) & mask()) {
      if (keys_[at] == set) return slots_[at];
      if (keys_[at] == EMPTY) return -1;
    }
  }

  void insert(int64_t set, int64_t slot) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    place(set, slot);
  }

 private:
  static constexpr int64_t EMPTY = -1;  // a set is at most 62 bits: never negative
  size_t mask() const { return keys_.size() - 1; }
  size_t home(int64_t set) const {
    return static_cast<size_t>((static_cast<uint64_t>(set) * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void place(int64_t set, int64_t slot) {
    size_t at = home(set);
    while (keys_[at] != EMPTY) at = (at + 1) & mask();
    keys_[at] = set, slots_[at] = slot;
    ++size_;
  }
  void grow() {
    std::vector<int64_t> keys(keys_.size() * 2, EMPTY), slots(keys_.size() * 2);
    keys.swap(keys_), slots.swap(slots_);
    --shift_, size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != EMPTY) place(keys[i], slots[i]);
    }
  }
  std::vector<int64_t> keys_, slots_;
  size_t size_ = 0;
  int shift_ = 58;  // 64 - log2(capacity)
};

struct Part {  // _part_dp's arguments: one part's operators, blocks and in-place chances
  int64_t m;
  gp::Array<int64_t> pred_mask, inside;
  gp::Array<bool> before, after;
  gp::Array<int64_t> sizes;
  int64_t constant;
  gp::Array<int64_t> ip_op, ip_size, ip_ptr, ip_host;
};

// Bytes live while v runs, the part's sets `done` run before it and `run` with it.
int64_t part_load(const Part& part, int64_t v, int64_t done, int64_t run) {
  const int64_t full = (int64_t{1} << part.m) - 1;
  int64_t load = part.constant;
  for (int64_t b = 0; b < part.sizes.len(); ++b) {
    const int64_t in = part.inside[b];
    if ((part.before[b] || (in & run)) && (part.after[b] || (in & ~done))) load += part.sizes[b];
  }
  for (int64_t c = 0; c < part.ip_op.len(); ++c) {
    if (part.ip_op[c] != v) continue;
    for (int64_t e = part.ip_ptr[c]; e < part.ip_ptr[c + 1]; ++e) {
      const int64_t h = part.ip_host[e];
      if (!part.after[h] && (part.inside[h] & full & ~run) == 0) {
        load -= part.ip_size[c];
        break;
      }
    }
  }
  return load;
}

// best: the lowest peak over orders running set `mask` first; reached from set `parent` by running `step`.
struct DownSet {
  int64_t mask, best, parent, step;
};

// The best peak over orders of one part (-1 past the state budget) and such an order (positions in the part).
int64_t best_part_order(const Part& part, int64_t state_limit, std::vector<int64_t>& order) {
  std::vector<DownSet> sets{{0, 0, -1, -1}};
  StateIndex index;
  index.insert(0, 0);
  for (size_t head = 0; head < sets.size(); ++head) {  // breadth first: by the number of operators run
    const int64_t done = sets[head].mask;
    for (int64_t v = 0; v < part.m; ++v) {
      const int64_t bit = int64_t{1} << v;
      if ((done & bit) || (part.pred_mask[v] & ~done) != 0) continue;
      const int64_t run = done | bit;
      const int64_t cost = std::max(sets[head].best, part_load(part, v, done, run));
      const int64_t at = index.find(run);
      if (at < 0) {
        if (static_cast<int64_t>(sets.size()) >= state_limit) return -1;
        index.insert(run, static_cast<int64_t>(sets.size()));
        sets.push_back({run, cost, static_cast<int64_t>(head), v});
      } else if (cost < sets[at].best) {
        sets[at].best = cost, sets[at].parent = static_cast<int64_t>(head), sets[at].step = v;
      }
    }
  }
  const int64_t all = index.find((int64_t{1} << part.m) - 1);
  order.assign(static_cast<size_t>(part.m), 0);
  for (int64_t p = part.m - 1, at = all; p >= 0; --p) {
    order[p] = sets[at].step;
    at = sets[at].parent;
  }
  return sets[all].best;
}

PyObject* part_dp(gp::Args& args) {
  const Part part{args.integer(0, "m"),
                  args.array<int64_t>(1, "pred_mask"),
                  args.array<int64_t>(2, "inside"),
                  args.array<bool>(3, "before"),
                  args.array<bool>(4, "after"),
                  args.array<int64_t>(5, "sizes"),
                  args.integer(6, "constant"),
                  args.array<int64_t>(7, "ip_op"),
                  args.array<int64_t>(8, "ip_size"),
                  args.array<int64_t>(9, "ip_ptr"),
                  args.array<int64_t>(10, "ip_host")};
  const int64_t state_limit = args.integer(11, "state_limit");
  int64_t value;
  std::vector<int64_t> order;
  {
    gp::NoGil released;
    value = best_part_order(part, state_limit, order);
  }
  PyObject* steps = gp::to_array(order);
  return steps == nullptr ? nullptr : Py_BuildValue("(LN)", static_cast<long long>(value), steps);
}

// ---- kernels.py: random keys to orders, and the local search's moves -------------------------------------

struct Graph {
  gp::Array<int64_t> pred_ptr, pred_idx, succ_ptr, succ_idx;
};

// The topological order that always runs the ready operator of smallest key (ties: lower index).
void decode_order(const double* keys, int64_t n, const Graph& g, int64_t* order) {
  std::vector<int64_t> indegree(static_cast<size_t>(n));
  std::vector<std::pair<double, int64_t>> heap;
  heap.reserve(static_cast<size_t>(n));
  auto later = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) { return b < a; };
  for (int64_t k = 0; k < n; ++k) {
    indegree[k] = g.pred_ptr[k + 1] - g.pred_ptr[k];
    if (indegree[k] == 0) {
      heap.emplace_back(keys[k], k);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  for (int64_t p = 0; p < n; ++p) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const int64_t u = heap.back().second;
    heap.pop_back();
    order[p] = u;
    for (int64_t e = g.succ_ptr[u]; e < g.succ_ptr[u + 1]; ++e) {
      const int64_t v = g.succ_idx[e];
      if (--indegree[v] == 0) {
        heap.emplace_back(keys[v], v);
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
  }
}

PyObject* decode_keys(gp::Args& args) {
  auto keys = args.array<double>(0, "keys");
  Graph g{args.array<int64_t>(1, "pred_ptr"), {}, args.array<int64_t>(2, "succ_ptr"),
          args.array<int64_t>(3, "succ_idx")};
  gp::Array<int64_t> order;
  PyObject* result = gp::new_array<int64_t>({keys.len()}, &order);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  decode_order(keys.data, keys.len(), g, order.data);
  return result;
}

// (peak, positions at the peak) of each row of keys decoded to an order.
PyObject* score_keys(gp::Args& args) {
  auto keys = args.array<double>(0, "keys");
  Graph g{args.array<int64_t>(1, "pred_ptr"), {}, args.array<int64_t>(2, "succ_ptr"),
          args.array<int64_t>(3, "succ_idx")};
  Model model = read_model(args, 4);
  const int64_t rows = keys.shape[0], n = keys.ndim == 2 ? keys.shape[1] : 0;
  gp::Array<int64_t> out;
  PyObject* result = gp::new_array<int64_t>({rows, 2}, &out);
  if (result == nullptr) return nullptr;
  gp::NoGil released;
  std::vector<int64_t> order(static_cast<size_t>(n)), pos(static_cast<size_t>(n)), load(static_cast<size_t>(n + 1));
  std::vector<int64_t> last(static_cast<size_t>(model.sizes.len()));
  for (int64_t r = 0; r < rows; ++r) {
    decode_order(keys.row(r), n, g, order.data());
    for (int64_t p = 0; p < n; ++p) pos[order[p]] = p;
    live_bytes(pos.data(), n, model, load.data(), last.data());
    auto [peak, count] = peak_and_count(load.data(), n + 1);
    out(r, 0) = peak, out(r, 1) = count;
  }
  return result;
}

constexpr double LONG_DRAGS = 0.25;  // kernels.py's: the share of drags that go anywhere
constexpr int64_t CARRY_SPAN = 64;   // kernels.py's: positions scanned beside an operator for its carry

struct Walk {  // an order, its positions, and the moves' scratch
  int64_t* order;
  std::vector<int64_t> pos, buffer;
  std::vector<char> mark;
  int64_t n;
};

// Move the operator at position src to position dst, shifting those between.
void move(Walk& w, int64_t src, int64_t dst) {
  const int64_t k = w.order[src];
  if (dst > src) {
    for (int64_t p = src; p < dst; ++p) w.order[p] = w.order[p + 1], w.pos[w.order[p]] = p;
  } else {
    for (int64_t p = src; p > dst; --p) w.order[p] = w.order[p - 1], w.pos[w.order[p]] = p;
  }
  w.order[dst] = k;
  w.pos[k] = dst;
}

// Positions lo..hi rewritten: the operators whose mark is `first`, then the others, in their order.
void regroup(Walk& w, int64_t lo, int64_t hi, bool first) {
  int64_t count = 0;
  for (bool want : {first, !first}) {
    for (int64_t p = lo; p <= hi; ++p) {
      if (static_cast<bool>(w.mark[w.order[p]]) == want) w.buffer[count++] = w.order[p];
    }
  }
  for (int64_t p = lo; p <= hi; ++p) {
    w.order[p] = w.buffer[p - lo];
    w.pos[w.order[p]] = p;
    w.mark[w.order[p]] = 0;
  }
}

// Move the operator at src to dst with the operators between that it depends on (earlier: ptr/idx are
// successor lists, an operator with a marked successor is marked) or that depend on it (later:
// predecessor lists), the others keeping their relative order: a valid order again.
void drag(Walk& w, int64_t src, int64_t dst, const gp::Array<int64_t>& ptr, const gp::Array<int64_t>& idx) {
  const int64_t step = dst < src ? -1 : 1;
  w.mark[w.order[src]] = 1;
  for (int64_t p = src + step; p != dst + step; p += step) {
    const int64_t u = w.order[p];
    for (int64_t e = ptr[u]; e < ptr[u + 1]; ++e) {
      if (w.mark[idx[e]]) {
        w.mark[u] = 1;
        break;
      }
    }
  }
  regroup(w, std::min(src, dst), std::max(src, dst), dst < src);
}

// Move the operator at src to dst with the operators near it, on the other side, that only it and they
// need (later: ptr/idx are successor lists, so its private producers go along) or that need only it and
// them (earlier: predecessor lists, its private consumers). The first and last positions touched.
std::pair<int64_t, int64_t> carry(Walk& w, int64_t src, int64_t dst, const gp::Array<int64_t>& ptr,
                                  const gp::Array<int64_t>& idx) {
  const bool later = dst > src;
  const int64_t step = later ? -1 : 1;
  const int64_t end = later ? std::max<int64_t>(0, src - CARRY_SPAN) : std::min(w.n - 1, src + CARRY_SPAN);
  w.mark[w.order[src]] = 1;
  for (int64_t p = src + step; p != end + step; p += step) {
    const int64_t u = w.order[p];
    bool is_private = ptr[u + 1] > ptr[u];
    for (int64_t e = ptr[u]; e < ptr[u + 1]; ++e) {
      if (!w.mark[idx[e]]) {
        is_private = false;
        break;
      }
    }
    w.mark[u] = is_private;
  }
  const int64_t lo = later ? end : dst, hi = later ? dst : end;
  regroup(w, lo, hi, !later);
  return {lo, hi};
}

// The window an operator may move in: after its predecessors, before its successors.
std::pair<int64_t, int64_t> window(const Walk& w, int64_t k, const Graph& g) {
  int64_t lo = 0, hi = w.n - 1;
  for (int64_t e = g.pred_ptr[k]; e < g.pred_ptr[k + 1]; ++e) lo = std::max(lo, w.pos[g.pred_idx[e]] + 1);
  for (int64_t e = g.succ_ptr[k]; e < g.succ_ptr[k + 1]; ++e) hi = std::min(hi, w.pos[g.succ_idx[e]] - 1);
  return {lo, hi};
}

// A move of several operators at once (kind 2-7); the positions touched, or (-1, -1) for none.
std::pair<int64_t, int64_t> group_move(Walk& w, int64_t kind, int64_t src, const Graph& g, NumbaRandom& rng) {
  const int64_t n = w.n;
  if (kind >= 6) {  // carried: anywhere the operator itself may go
    auto [lo, hi] = window(w, w.order[src], g);
    int64_t dst = kind == 6 && lo < src ? rng.randint(lo, src) : -1;
    dst = kind == 7 && src < hi ? rng.randint(src + 1, hi + 1) : dst;
    if (dst < 0) return {-1, -1};
    if (kind == 6) return carry(w, src, dst, g.pred_ptr, g.pred_idx);  // earlier, with the consumers only it feeds
    return carry(w, src, dst, g.succ_ptr, g.succ_idx);                 // later, with private producers
  }
  int64_t reach;
  if (rng.random() < LONG_DRAGS) {  // a group carried across the graph
    reach = 2 + rng.randint(0, n);
  } else {
    reach = std::min(n - 1, 2 + static_cast<int64_t>(rng.exponential(16.0)));
  }
  const bool earlier = kind % 2 == 0;
  const int64_t dst = std::min(n - 1, std::max<int64_t>(0, earlier ? src - reach : src + reach));
  if (dst == src) return {-1, -1};
  if (earlier) {
    drag(w, src, dst, g.succ_ptr, g.succ_idx);  // with the operators between that it depends on
  } else {
    drag(w, src, dst, g.pred_ptr, g.pred_idx);  // with those between that depend on it
  }
  return {std::min(src, dst), std::max(src, dst)};
}

// Improve `order` in place by moves kept when the score does not get worse (kernels.py's local_search).
PyObject* local_search(gp::Args& args) {
  auto order = args.array<int64_t>(0, "order", true);
  const int64_t moves = args.integer(1, "moves");
  const int64_t seed = args.integer(2, "seed");
  Graph g{args.array<int64_t>(3, "pred_ptr"), args.array<int64_t>(4, "pred_idx"),
          args.array<int64_t>(5, "succ_ptr"), args.array<int64_t>(6, "succ_idx")};
  Model model = read_model(args, 7);
  const int64_t n = order.len();
  int64_t peak, count;
  {
    gp::NoGil released;
    NumbaRandom rng(static_cast<uint32_t>(seed));
    Walk w{order.data, std::vector<int64_t>(n), std::vector<int64_t>(n), std::vector<char>(n, 0), n};
    for (int64_t p = 0; p < n; ++p) w.pos[order[p]] = p;
    std::vector<int64_t> load(static_cast<size_t>(n + 1)), last(static_cast<size_t>(model.sizes.len()));
    std::vector<int64_t> saved(order.data, order.data + n);
    live_bytes(w.pos.data(), n, model, load.data(), last.data());
    std::tie(peak, count) = peak_and_count(load.data(), n + 1);
    int64_t at_peak = argmax(load.data(), n + 1);
    for (int64_t t = 0; t < moves; ++t) {
      const int64_t src = rng.random() < 0.5 ? std::min(n - 1, std::max<int64_t>(0, at_peak + rng.randint(-8, 9)))
                                             : rng.randint(0, n);
      const int64_t kind = rng.randint(0, 8);
      int64_t lo, hi, dst = -1;
      if (kind < 2) {
        std::tie(lo, hi) = window(w, order[src], g);
        if (hi <= lo) continue;
        dst = rng.randint(lo, hi);
        if (dst >= src) ++dst;
        move(w, src, dst);
      } else {
        std::copy(order.data, order.data + n, saved.begin());
        std::tie(lo, hi) = group_move(w, kind, src, g, rng);
        if (lo < 0) continue;
      }
      live_bytes(w.pos.data(), n, model, load.data(), last.data());
      auto [new_peak, new_count] = peak_and_count(load.data(), n + 1);
      if (new_peak < peak || (new_peak == peak && new_count <= count)) {
        peak = new_peak, count = new_count;
        at_peak = argmax(load.data(), n + 1);
      } else if (kind < 2) {
        move(w, dst, src);
      } else {
        for (int64_t p = lo; p <= hi; ++p) order[p] = saved[p], w.pos[order[p]] = p;
      }
    }
  }
  return Py_BuildValue("(LL)", static_cast<long long>(peak), static_cast<long long>(count));
}

}  // namespace

GP_MODULE(_schedule, "Kernels of gaplanner.schedule (the order search).",
          GP_DEF(profile, "profile(pos, n, model, load, last): live bytes at each position, into load"),
          GP_DEF(surely_live, "surely_live(topo, pred_ptr, pred_idx, succ_ptr, succ_idx, acc_ptr, acc_op, sizes, "
                              "from_start, kept, chunk_words) -> (load, related)"),
          GP_DEF(part_dp, "part_dp(m, pred_mask, inside, before, after, sizes, constant, ip_op, ip_size, ip_ptr, "
                          "ip_host, state_limit) -> (peak or -1, order)"),
          GP_DEF(decode_keys, "decode_keys(keys, pred_ptr, succ_ptr, succ_idx) -> order"),
          GP_DEF(score_keys, "score_keys(keys, pred_ptr, succ_ptr, succ_idx, model) -> (rows, 2) int64"),
          GP_DEF(local_search, "local_search(order, moves, seed, pred_ptr, pred_idx, succ_ptr, succ_idx, model) "
                               "-> (peak, count); order improved in place"))
