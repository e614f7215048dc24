// Kernels of gaplanner/search/exact/dfs.py: the exact search's depth-first search over canonical
// placements, one target at a time.
//
// A probe asks: can every block of a part lie below `target`? Its search places blocks one per level,
// each on its floor (the lowest aligned offset above the placed blocks it conflicts with), in
// non-decreasing order of (floor, rank). The whole state lives in the probe's arrays (the tuple `s`,
// beside the part's read-only tuple `p`), so a call searches a slice of placements and returns; the
// caller reads the clock between slices, and the same slices give the same plan.
//
// Splitting as it goes: when a placement leaves the unplaced blocks of the current group in several
// connected pieces (no unplaced conflict between them), each piece becomes a group of its own and is
// solved in turn, all from the same starting key. Pieces do not constrain each other, so when one piece
// has no plan the search jumps back over the pieces solved before it, to the placement that split them,
// instead of retrying their placements one by one.
#include "common.hpp"

namespace {

using Vec = gp::Array<int64_t>;

constexpr int64_t BIG = INT64_MAX;
enum Status : int64_t { FOUND, INFEASIBLE, PAUSED, NEED_SPACE };

// Positions in the tuple of the part's arrays, as in dfs.py.
enum PartArray {
  SIZES, ALIGNS, FIXED, RANK, TWIN, TWIN_CLASS, NBR_PTR, NBR_IDX, CLQ_PTR, CLQ_IDX, BC_PTR, BC_IDX,
  ORDER_KEYS, WIDTH, AREA, SIZE_KEY, START_KEY, END_KEY, NBR_LEAST, LEAST, PART_ARRAYS
};
// Positions in the tuple of state arrays, as in dfs.py: per block, group, clique; per level; per frame
// (a split); the logs and scratch; the scalars.
enum StateArray {
  OFFSETS, MIN_OFF, FLOOR, TOTAL, GRP, GRP_LEFT, GRP_FRAME, CLQ_GRP, RANK_NOW,
  LV_BLK, LV_OFF, LV_RANK, LV_DONE, LV_HEIGHT, LV_MO, LV_FL, LV_GROUP, LV_ROOT,
  F_START, F_PARENT, F_FIRST, F_COUNT, F_CUR, F_RK,
  MO_B, MO_V, FL_C, FL_V, RK_B, RK_V, STAMP, AFFECTED, QUEUE, NEAR, WITNESS, SC, STATE_ARRAYS
};
// Scalars in s[SC].
enum Scalar { DEPTH, MO_TOP, FL_TOP, RK_TOP, STAMP_NOW, NODES, FRAMES, NEXT_GROUP, SPLITS };

const char* const kPartNames[PART_ARRAYS] = {
    "p[SIZES]", "p[ALIGNS]", "p[FIXED]", "p[RANK]", "p[TWIN]", "p[TWIN_CLASS]", "p[NBR_PTR]",
    "p[NBR_IDX]", "p[CLQ_PTR]", "p[CLQ_IDX]", "p[BC_PTR]", "p[BC_IDX]", "p[ORDER_KEYS]", "p[WIDTH]",
    "p[AREA]", "p[SIZE_KEY]", "p[START_KEY]", "p[END_KEY]", "p[NBR_LEAST]", "p[LEAST]"};
const char* const kStateNames[STATE_ARRAYS] = {
    "s[OFFSETS]", "s[MIN_OFF]", "s[FLOOR]", "s[TOTAL]", "s[GRP]", "s[GRP_LEFT]", "s[GRP_FRAME]",
    "s[CLQ_GRP]", "s[RANK_NOW]", "s[LV_BLK]", "s[LV_OFF]", "s[LV_RANK]", "s[LV_DONE]", "s[LV_HEIGHT]",
    "s[LV_MO]", "s[LV_FL]", "s[LV_GROUP]", "s[LV_ROOT]", "s[F_START]", "s[F_PARENT]", "s[F_FIRST]",
    "s[F_COUNT]", "s[F_CUR]", "s[F_RK]", "s[MO_B]", "s[MO_V]", "s[FL_C]", "s[FL_V]", "s[RK_B]",
    "s[RK_V]", "s[STAMP]", "s[AFFECTED]", "s[QUEUE]", "s[NEAR]", "s[WITNESS]", "s[SC]"};

// int64 sums as numba computes them: wrapping, where one term may be the BIG sentinel.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

inline int64_t align_up(int64_t x, int64_t alignment) {
  return gp::floor_div(wrap_add(x, alignment - 1), alignment) * alignment;
}

// Index permutation sorting `key` ascending, ties by index (numpy's stable argsort).
std::vector<int64_t> stable_argsort(const std::vector<int64_t>& key) {
  std::vector<int64_t> order(key.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key[a] < key[b]; });
  return order;
}

// One probe's part (p) and state (s), read from the Python tuples.
struct Dfs {
  Vec p[PART_ARRAYS];
  Vec s[STATE_ARRAYS];
  int64_t* sc = nullptr;
  int64_t n = 0;  // blocks
  int64_t m = 0;  // cliques

  explicit Dfs(gp::Args& args) {
    for (int k = 0; k < PART_ARRAYS; ++k) p[k] = args.item<int64_t>(0, k, kPartNames[k]);
    for (int k = 0; k < STATE_ARRAYS; ++k) s[k] = args.item<int64_t>(1, k, kStateNames[k], true);
    if (s[SC].len() <= SPLITS) args.fail("s[SC]", "must hold the search's scalars");
    if (p[LEAST].len() < 1) args.fail("p[LEAST]", "must hold the smallest neighbour's size");
    sc = s[SC].data;
    n = p[SIZES].len();
    m = s[TOTAL].len();
  }

  // The lowest top an unplaced movable block of group g could reach: no block goes at or above it.
  int64_t lowest_top(int64_t g) const {
    const Vec &sizes = p[SIZES], &fixed = p[FIXED], &offsets = s[OFFSETS], &min_off = s[MIN_OFF], &grp = s[GRP];
    int64_t height = BIG;
    for (int64_t b = 0; b < n; ++b) {
      if (offsets[b] < 0 && fixed[b] < 0 && grp[b] == g) height = std::min(height, min_off[b] + sizes[b]);
    }
    return height;
  }

  // The unplaced block of level d's group with the smallest (floor, rank) above the level's key.
  int64_t next_candidate(int64_t d) const {
    const Vec &rank = s[RANK_NOW], &twin_prev = p[TWIN], &offsets = s[OFFSETS], &min_off = s[MIN_OFF];
    const Vec& grp = s[GRP];
    const int64_t g = s[LV_GROUP][d], key_off = s[LV_OFF][d], key_rank = s[LV_RANK][d];
    const int64_t height = s[LV_HEIGHT][d];
    int64_t best = -1, best_off = BIG, best_rank = BIG;
    for (int64_t b = 0; b < n; ++b) {
      if (offsets[b] >= 0 || grp[b] != g) continue;
      const int64_t o = min_off[b], r = rank[b];
      if (o >= height || o < key_off || (o == key_off && r <= key_rank)) continue;
      if (o < best_off || (o == best_off && r < best_rank)) {
        const int64_t twin = twin_prev[b];
        if (twin >= 0 && offsets[twin] < 0 && grp[twin] == g) continue;  // its identical twin goes first
        best = b, best_off = o, best_rank = r;
      }
    }
    return best;
  }

  // Unplace b (its own totals and counts; the logs are rolled back by roll_back).
  void take_back(int64_t b) {
    const Vec &bc_ptr = p[BC_PTR], &bc_idx = p[BC_IDX];
    for (int64_t e = bc_ptr[b]; e < bc_ptr[b + 1]; ++e) s[TOTAL][bc_idx[e]] += p[SIZES][b];
    s[OFFSETS][b] = -1;
    s[GRP_LEFT][s[GRP][b]] += 1;
  }

  // Restore floors and clique floors changed since the marks.
  void roll_back(int64_t mo_mark, int64_t fl_mark) {
    for (int64_t k = sc[MO_TOP] - 1; k >= mo_mark; --k) s[MIN_OFF][s[MO_B][k]] = s[MO_V][k];
    for (int64_t k = sc[FL_TOP] - 1; k >= fl_mark; --k) s[FLOOR][s[FL_C][k]] = s[FL_V][k];
    sc[MO_TOP] = mo_mark, sc[FL_TOP] = fl_mark;
  }

  // Raise the floors of c's unplaced neighbours above top (logged); note the cliques whose floor may
  // rise with them in `affected`. Counts the unplaced neighbours in `above`; false when one no longer fits.
  bool raise_neighbours(int64_t c, int64_t top, int64_t capacity, int64_t& above, int64_t& n_affected) {
    const Vec &sizes = p[SIZES], &aligns = p[ALIGNS], &fixed = p[FIXED], &nbr_ptr = p[NBR_PTR];
    const Vec &nbr_idx = p[NBR_IDX], &bc_ptr = p[BC_PTR], &bc_idx = p[BC_IDX];
    const Vec &offsets = s[OFFSETS], &min_off = s[MIN_OFF], &floor = s[FLOOR], &stamp = s[STAMP];
    const Vec &affected = s[AFFECTED], &witness = s[WITNESS], &mo_b = s[MO_B], &mo_v = s[MO_V];
    const int64_t now = sc[STAMP_NOW];
    bool ok = true;
    int64_t mo_top = sc[MO_TOP];
    for (int64_t e = nbr_ptr[c]; e < nbr_ptr[c + 1]; ++e) {
      const int64_t x = nbr_idx[e];
      if (offsets[x] >= 0) continue;
      ++above;
      if (min_off[x] >= top) continue;
      mo_b[mo_top] = x, mo_v[mo_top] = min_off[x];
      ++mo_top;
      const int64_t raised = align_up(top, aligns[x]);
      min_off[x] = raised;
      if ((fixed[x] >= 0 && raised > fixed[x]) || raised + sizes[x] > capacity) ok = false;
      for (int64_t f = bc_ptr[x]; f < bc_ptr[x + 1]; ++f) {
        const int64_t q = bc_idx[f], w = witness[q];
        if (stamp[q] != now && (w == x || offsets[w] >= 0 || min_off[w] != floor[q])) {
          // The clique's floor is still its witness's floor unless the witness moved or is placed.
          stamp[q] = now;
          affected[n_affected++] = q;
        }
      }
    }
    sc[MO_TOP] = mo_top;
    return ok;
  }

  // Raise (logged) the floors of c's cliques to its top, and of the affected cliques to their lowest member.
  void raise_floors(int64_t c, int64_t top, int64_t n_affected) {
    const Vec &clq_ptr = p[CLQ_PTR], &clq_idx = p[CLQ_IDX], &bc_ptr = p[BC_PTR], &bc_idx = p[BC_IDX];
    const Vec &offsets = s[OFFSETS], &min_off = s[MIN_OFF], &floor = s[FLOOR], &total = s[TOTAL];
    const Vec &fl_c = s[FL_C], &fl_v = s[FL_V], &affected = s[AFFECTED], &witness = s[WITNESS];
    int64_t fl_top = sc[FL_TOP];
    for (int64_t e = bc_ptr[c]; e < bc_ptr[c + 1]; ++e) {
      const int64_t q = bc_idx[e];
      total[q] -= p[SIZES][c];
      if (floor[q] < top) {  // every unplaced member conflicts with c and goes above it
        fl_c[fl_top] = q, fl_v[fl_top] = floor[q];
        ++fl_top;
        floor[q] = top;
      }
    }
    for (int64_t k = 0; k < n_affected; ++k) {  // no unplaced member goes below the lowest floor among them
      const int64_t q = affected[k];
      int64_t lowest = BIG;
      for (int64_t e = clq_ptr[q]; e < clq_ptr[q + 1]; ++e) {
        const int64_t y = clq_idx[e];
        if (offsets[y] < 0 && min_off[y] < lowest) {
          lowest = min_off[y];
          witness[q] = y;
        }
      }
      if (lowest != BIG && floor[q] < lowest) {
        fl_c[fl_top] = q, fl_v[fl_top] = floor[q];
        ++fl_top;
        floor[q] = lowest;
      }
    }
    sc[FL_TOP] = fl_top;
  }

  // Whether every clique's unplaced members still fit under capacity after placing c (of group g) at off.
  bool cliques_fit(int64_t c, int64_t g, int64_t off, int64_t capacity) const {
    const Vec &floor = s[FLOOR], &total = s[TOTAL], &clq_grp = s[CLQ_GRP];
    const int64_t least = p[LEAST][0];
    for (int64_t q = 0; q < m; ++q) {
      if (total[q] <= 0) continue;
      int64_t lowest;
      if (clq_grp[q] != g) {
        lowest = floor[q];
      } else if (floor[q] <= off && wrap_add(off + total[q], least) > capacity) {
        lowest = lowest_ahead(q, off, s[RANK_NOW][c], capacity - total[q]);
      } else {  // within the group, blocks come in non-decreasing offset: none goes below c
        lowest = std::max(floor[q], off);
      }
      if (wrap_add(lowest, total[q]) > capacity) return false;
    }
    return true;
  }

  // Place c on its floor and propagate: whether still feasible; `above`: unplaced blocks conflicting with c.
  bool place(int64_t c, int64_t capacity, int64_t& above) {
    const int64_t off = s[MIN_OFF][c], top = off + p[SIZES][c], g = s[GRP][c];
    s[OFFSETS][c] = off;
    s[GRP_LEFT][g] -= 1;
    above = 0;
    sc[STAMP_NOW] += 1;  // a fresh stamp for the cliques this placement affects
    int64_t n_affected = 0;
    bool ok = raise_neighbours(c, top, capacity, above, n_affected) && top <= capacity;
    raise_floors(c, top, n_affected);
    return ok && cliques_fit(c, g, off, capacity);
  }

  // The lowest offset an unplaced member of clique q can still take after a placement at (off, r); it
  // stops early at one no higher than `enough`.
  //
  // The group's placements go on in increasing (floor, rank) from (off, r). A member whose (floor, rank)
  // is already behind that key is placed, if ever, only after a later placement raises its floor: a
  // conflicting block placed at off or above, so its floor passes off by at least its smallest
  // neighbour's size. Pinned members keep their floor. At a target with no slack this finds at once a
  // time section none of its blocks can fill.
  int64_t lowest_ahead(int64_t q, int64_t off, int64_t r, int64_t enough) const {
    const Vec &clq_ptr = p[CLQ_PTR], &clq_idx = p[CLQ_IDX], &aligns = p[ALIGNS], &fixed = p[FIXED];
    const Vec &nbr_least = p[NBR_LEAST], &offsets = s[OFFSETS], &min_off = s[MIN_OFF], &rank = s[RANK_NOW];
    int64_t lowest = BIG;
    for (int64_t e = clq_ptr[q]; e < clq_ptr[q + 1]; ++e) {
      const int64_t y = clq_idx[e];
      if (offsets[y] >= 0) continue;
      int64_t o = min_off[y];
      if (fixed[y] < 0 && (o < off || (o == off && rank[y] < r))) {
        o = nbr_least[y] == BIG ? BIG : align_up(off + nbr_least[y], aligns[y]);
      }
      if (o < lowest) {
        lowest = o;
        if (lowest <= enough) break;
      }
    }
    return std::max(lowest, off);
  }

  // Label the connected pieces of group g's unplaced blocks first, first + 1, ... (their counts in
  // GRP_LEFT); 1 at once when the first piece reaches all `above` unplaced neighbours of c, its blocks
  // given their group back. The pieces' count.
  int64_t label_pieces(int64_t c, int64_t g, int64_t first, int64_t above) {
    const Vec &nbr_ptr = p[NBR_PTR], &nbr_idx = p[NBR_IDX], &offsets = s[OFFSETS], &grp = s[GRP];
    const Vec &queue = s[QUEUE], &near = s[NEAR];
    int64_t pieces = 0;
    // The group was connected with c: every block in it is joined to a neighbour of c. So once the
    // walk has reached every unplaced neighbour of c, it has reached the whole group: one piece.
    const int64_t mark = sc[NODES];
    for (int64_t e = nbr_ptr[c]; e < nbr_ptr[c + 1]; ++e) near[nbr_idx[e]] = mark;
    for (int64_t start = 0; start < n; ++start) {
      if (offsets[start] >= 0 || grp[start] != g) continue;
      const int64_t label = first + pieces;
      ++pieces;
      grp[start] = label;
      int64_t head = 0, tail = 1;
      queue[0] = start;
      int64_t reached = near[start] == mark;
      while (head < tail) {
        if (pieces == 1 && reached == above) {
          for (int64_t k = 0; k < tail; ++k) grp[queue[k]] = g;
          return 1;
        }
        const int64_t b = queue[head++];
        for (int64_t e = nbr_ptr[b]; e < nbr_ptr[b + 1]; ++e) {
          const int64_t x = nbr_idx[e];
          if (offsets[x] < 0 && grp[x] == g) {
            grp[x] = label;
            queue[tail++] = x;
            reached += near[x] == mark;
          }
        }
      }
      s[GRP_LEFT][label] = tail;
    }
    return pieces;
  }

  // After placing c at level d: split its group into connected pieces; the pieces' count.
  int64_t split(int64_t d, int64_t c, int64_t above, int64_t capacity) {
    const Vec &bc_ptr = p[BC_PTR], &bc_idx = p[BC_IDX], &offsets = s[OFFSETS], &grp = s[GRP];
    const int64_t g = grp[c], first = sc[NEXT_GROUP];
    const int64_t pieces = label_pieces(c, g, first, above);
    if (pieces < 2) {  // one piece: give the blocks their group back
      for (int64_t b = 0; b < n; ++b) {
        if (grp[b] == first) grp[b] = g;
      }
      return pieces;
    }
    hardest_first(first, pieces, capacity);
    const int64_t f = sc[FRAMES];
    sc[FRAMES] += 1;
    sc[NEXT_GROUP] += pieces;
    s[F_START][f] = d + 1, s[F_PARENT][f] = g, s[F_FIRST][f] = first, s[F_COUNT][f] = pieces, s[F_CUR][f] = 0;
    s[F_RK][f] = sc[RK_TOP];
    for (int64_t k = 0; k < pieces; ++k) s[GRP_FRAME][first + k] = f;
    const Vec& clq_grp = s[CLQ_GRP];
    for (int64_t b = 0; b < n; ++b) {
      if (offsets[b] < 0 && first <= grp[b] && grp[b] < first + pieces) {
        for (int64_t e = bc_ptr[b]; e < bc_ptr[b + 1]; ++e) clq_grp[bc_idx[e]] = grp[b];
      }
    }
    rerank(first, pieces);
    return pieces;
  }

  // The pieces' blocks in the heuristic's order (descending keys, ties by index), each clique's weight
  // (key T) what is left unplaced: each block's position.
  std::vector<int64_t> fresh_ranks(const std::vector<int64_t>& members) const {
    const Vec &bc_ptr = p[BC_PTR], &bc_idx = p[BC_IDX], &total = s[TOTAL], &keys = p[ORDER_KEYS];
    const size_t k = members.size();
    std::vector<int64_t> heaviest(k, 0), negated(k), order(k), fresh(k);
    for (size_t i = 0; i < k; ++i) {
      const int64_t b = members[i];
      for (int64_t e = bc_ptr[b]; e < bc_ptr[b + 1]; ++e) heaviest[i] = std::max(heaviest[i], total[bc_idx[e]]);
      order[i] = static_cast<int64_t>(i);
    }
    for (int64_t j = keys.len() - 1; j >= 0; --j) {  // stable sorts, last key first: descending, ties by index
      const int64_t code = keys[j];
      for (size_t i = 0; i < k; ++i) {
        const int64_t key = code == 0 ? heaviest[i] : p[WIDTH + code - 1][members[i]];
        negated[i] = static_cast<int64_t>(0 - static_cast<uint64_t>(key));
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return negated[a] < negated[b]; });
    }
    for (size_t i = 0; i < k; ++i) fresh[order[i]] = static_cast<int64_t>(i);
    return fresh;
  }

  // Order the pieces' blocks afresh by the heuristic, with each clique's weight what is left unplaced.
  //
  // Each piece is a problem of its own, searched from an empty key, as MiniMalloc solves each part it
  // splits off; the old ranks go to a log the frame undoes. Interchangeable blocks keep their order
  // among themselves (see next_candidate).
  void rerank(int64_t first, int64_t pieces) {
    const Vec &offsets = s[OFFSETS], &grp = s[GRP], &rank = s[RANK_NOW], &twin_class = p[TWIN_CLASS];
    std::vector<int64_t> members;
    for (int64_t b = 0; b < n; ++b) {
      if (offsets[b] < 0 && first <= grp[b] && grp[b] < first + pieces) members.push_back(b);
    }
    const int64_t k = static_cast<int64_t>(members.size());
    const std::vector<int64_t> fresh = fresh_ranks(members);
    std::vector<int64_t> by_fresh_key(k), by_chain_key(k);
    for (int64_t i = 0; i < k; ++i) {
      const int64_t c = twin_class[members[i]], kind = c >= 0 ? c : n + members[i];
      by_fresh_key[i] = kind * (k + 1) + fresh[i];
      by_chain_key[i] = kind * (n + 1) + p[RANK][members[i]];
    }
    const std::vector<int64_t> by_fresh = stable_argsort(by_fresh_key), by_chain = stable_argsort(by_chain_key);
    int64_t top = sc[RK_TOP];
    for (int64_t i = 0; i < k; ++i) {
      const int64_t b = members[by_chain[i]];
      s[RK_B][top] = b, s[RK_V][top] = rank[b];
      ++top;
      rank[b] = fresh[by_fresh[i]];
    }
    sc[RK_TOP] = top;
  }

  // Renumber the pieces by their least slack under the target: the one most likely to fail goes first.
  void hardest_first(int64_t first, int64_t pieces, int64_t capacity) {
    const Vec &bc_ptr = p[BC_PTR], &bc_idx = p[BC_IDX], &offsets = s[OFFSETS], &grp = s[GRP];
    const Vec &floor = s[FLOOR], &total = s[TOTAL], &grp_left = s[GRP_LEFT];
    std::vector<int64_t> slack(pieces, BIG), new_label(pieces), left(pieces);
    for (int64_t b = 0; b < n; ++b) {
      const int64_t k = grp[b] - first;
      if (offsets[b] < 0 && 0 <= k && k < pieces) {
        for (int64_t e = bc_ptr[b]; e < bc_ptr[b + 1]; ++e) {
          const int64_t q = bc_idx[e];
          slack[k] = std::min(slack[k], capacity - floor[q] - total[q]);
        }
      }
    }
    const std::vector<int64_t> order = stable_argsort(slack);
    for (int64_t k = 0; k < pieces; ++k) left[k] = grp_left[first + k];
    for (int64_t position = 0; position < pieces; ++position) {
      new_label[order[position]] = first + position;
      grp_left[first + position] = left[order[position]];
    }
    for (int64_t b = 0; b < n; ++b) {
      const int64_t k = grp[b] - first;
      if (offsets[b] < 0 && 0 <= k && k < pieces) grp[b] = new_label[k];
    }
  }

  // Start level d on group g; root: the frame whose piece starts here, or -1.
  void enter(int64_t d, int64_t g, int64_t root, int64_t key_off, int64_t key_rank) {
    s[LV_GROUP][d] = g, s[LV_ROOT][d] = root, s[LV_OFF][d] = key_off, s[LV_RANK][d] = key_rank;
    s[LV_DONE][d] = 0;
    s[LV_HEIGHT][d] = lowest_top(g);
  }

  // Drop the frames from keep up: their pieces' blocks and cliques go back to the group split.
  void pop_frames(int64_t keep) {
    const Vec &grp = s[GRP], &clq_grp = s[CLQ_GRP], &rank = s[RANK_NOW];
    if (keep < sc[FRAMES]) {
      for (int64_t k = sc[RK_TOP] - 1; k >= s[F_RK][keep]; --k) rank[s[RK_B][k]] = s[RK_V][k];
      sc[RK_TOP] = s[F_RK][keep];
    }
    for (int64_t f = sc[FRAMES] - 1; f >= keep; --f) {
      const int64_t first = s[F_FIRST][f], last = s[F_FIRST][f] + s[F_COUNT][f], parent = s[F_PARENT][f];
      for (int64_t b = 0; b < grp.len(); ++b) {
        if (first <= grp[b] && grp[b] < last) grp[b] = parent;
      }
      for (int64_t q = 0; q < clq_grp.len(); ++q) {
        if (first <= clq_grp[q] && clq_grp[q] < last) clq_grp[q] = parent;
      }
      sc[NEXT_GROUP] = first;
    }
    sc[FRAMES] = keep;
  }

  // Level d's group is complete: start the next piece to solve; false when nothing is left.
  bool advance(int64_t d) {
    int64_t g = s[LV_GROUP][d];
    while (true) {
      const int64_t f = s[GRP_FRAME][g];
      if (f < 0) return false;
      if (s[F_CUR][f] + 1 < s[F_COUNT][f]) {
        s[F_CUR][f] += 1;
        enter(d, s[F_FIRST][f] + s[F_CUR][f], f, -1, -1);
        return true;
      }
      g = s[F_PARENT][f];  // every piece done: the group that was split is done too
    }
  }

  // Level d has no candidate left: go back to the level before (over a whole split when a piece has no
  // plan); false when there is none.
  bool backtrack(int64_t d) {
    const int64_t root = s[LV_ROOT][d];
    int64_t back;
    if (root >= 0) {  // a piece has no plan: neither has the split, whatever the pieces before it did
      back = s[F_START][root] - 1;
      for (int64_t k = d - 1; k > back; --k) take_back(s[LV_BLK][k]);
      pop_frames(root);
    } else if (d == 0) {
      return false;
    } else {
      back = d - 1;
    }
    sc[DEPTH] = back;
    take_back(s[LV_BLK][back]);
    roll_back(s[LV_MO][back], s[LV_FL][back]);
    return true;
  }

  // Whether placing c could overflow a log (the caller grows them).
  bool logs_full(int64_t c) const {
    const bool floors_full = sc[FL_TOP] + (p[BC_PTR][c + 1] - p[BC_PTR][c]) + m > s[FL_C].len();
    const bool raises_full = sc[MO_TOP] + (p[NBR_PTR][c + 1] - p[NBR_PTR][c]) > s[MO_B].len();
    return floors_full || raises_full || sc[RK_TOP] + n > s[RK_B].len();
  }

  // Search for at most `budget` placements from the state: FOUND, INFEASIBLE, PAUSED or NEED_SPACE.
  Status search(int64_t capacity, int64_t budget) {
    int64_t nodes = 0;
    while (true) {
      const int64_t d = sc[DEPTH];
      if (d == n) return FOUND;
      if (s[GRP_LEFT][s[LV_GROUP][d]] == 0) {
        if (!advance(d)) return FOUND;
        continue;
      }
      if (nodes >= budget) return PAUSED;
      const int64_t c = s[LV_DONE][d] ? -1 : next_candidate(d);
      if (c < 0) {
        if (!backtrack(d)) return INFEASIBLE;
        continue;
      }
      if (logs_full(c)) return NEED_SPACE;
      ++nodes;
      sc[NODES] += 1;
      s[LV_BLK][d] = c, s[LV_OFF][d] = s[MIN_OFF][c], s[LV_RANK][d] = s[RANK_NOW][c];
      s[LV_MO][d] = sc[MO_TOP], s[LV_FL][d] = sc[FL_TOP];
      int64_t above = 0;
      const bool ok = place(c, capacity, above);
      s[LV_DONE][d] = above == 0;  // nothing rests on c: if this branch fails, its siblings do too
      if (!ok) {
        take_back(c);
        roll_back(s[LV_MO][d], s[LV_FL][d]);
        continue;
      }
      sc[DEPTH] = d + 1;
      if (d + 1 == n) continue;
      const int64_t g = s[GRP][c];
      if (sc[SPLITS] && above >= 2 && s[GRP_LEFT][g] >= 2 && split(d, c, above, capacity) >= 2) {
        const int64_t f = sc[FRAMES] - 1;
        enter(d + 1, s[F_FIRST][f], f, -1, -1);
      } else {
        enter(d + 1, g, -1, s[OFFSETS][c], s[RANK_NOW][c]);
      }
    }
  }
};

// search(p, s, capacity, budget) -> status: at most `budget` more placements from the state `s`,
// changed in place; the GIL is released throughout.
PyObject* search(gp::Args& args) {
  Dfs dfs(args);
  const int64_t capacity = args.integer(2, "capacity"), budget = args.integer(3, "budget");
  Status status;
  {
    gp::NoGil released;
    status = dfs.search(capacity, budget);
  }
  return gp::to_py(static_cast<int64_t>(status));
}

// enter(p, s, d, g, root, key_off, key_rank): start level d on group g.
PyObject* enter(gp::Args& args) {
  Dfs dfs(args);
  dfs.enter(args.integer(2, "d"), args.integer(3, "g"), args.integer(4, "root"), args.integer(5, "key_off"),
            args.integer(6, "key_rank"));
  Py_RETURN_NONE;
}

}  // namespace

GP_MODULE(_dfs, "Kernels of gaplanner.search.exact.dfs.",
          GP_DEF(search, "search(p, s, capacity, budget) -> FOUND, INFEASIBLE, PAUSED or NEED_SPACE"),
          GP_DEF(enter, "enter(p, s, d, g, root, key_off, key_rank): start level d on group g"))
