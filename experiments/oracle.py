"""An independent reading of the memory rules (docs/rules.md), for the planner-vs-oracle campaign.

Written from the rules page and the input formats (docs/formats.md), not from
the library: it reads the raw JSON documents and arrays the campaign made,
decides pair by pair which blocks may share bytes, checks a plan's offsets
against that, and finds the smallest arena by brute force (first-fit over
every order of the blocks, for every legal set of in-place writes). First-fit
over every order reaches the optimum: place the blocks of an optimal plan in
order of their offsets and each lands at or below its place there.

A :class:`Reading` is what the checks need of any input: every item (tensor,
workspace or buffer) with its size, alignment and pinned offset, which items
are one view group, the in-place writes a plan may take, and whether two
items are apart in time (one done before the other starts).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

START, END = "<start>", "<end>"
DTYPE_BYTES = {"int8": 1, "float16": 2, "float32": 4, "int64": 8}


@dataclass
class Reading:
    """The items of one input under the rules, and who may share bytes with whom."""

    sizes: dict[str, int]
    alignment: dict[str, int]
    pinned: dict[str, int]
    apart: Callable[[str, str], bool]
    root: dict[str, str] = field(default_factory=dict)  # view group of each item (itself when none)
    chances: list[tuple[str, str]] = field(default_factory=list)  # legal in-place writes (out, host)

    def group_of(self, item: str) -> str:
        return self.root.get(item, item)


# --- Buffer lists ----------------------------------------------------------------------------------


def interval_reading(
    ids: Sequence[str],
    sizes: Sequence[int],
    lower: Sequence,
    upper: Sequence,
    alignment: int,
    pinned: Sequence[int],
) -> Reading:
    """Buffers with half-open lifetimes ``[lower, upper)``, or vector clocks (one component a stream).

    A buffer is done before another starts when its end is at or before the
    other's start in every component.
    """
    ends = {i: (_vector(lo), _vector(up)) for i, lo, up in zip(ids, lower, upper, strict=True)}

    def apart(x: str, y: str) -> bool:
        (lx, ux), (ly, uy) = ends[x], ends[y]
        return all(a <= b for a, b in zip(ux, ly, strict=True)) or all(
            a <= b for a, b in zip(uy, lx, strict=True)
        )

    return Reading(
        sizes=dict(zip(ids, map(int, sizes), strict=True)),
        alignment={i: alignment for i in ids},
        pinned={i: int(p) for i, p in zip(ids, pinned, strict=True) if p >= 0},
        apart=apart,
    )


def _vector(time: Any) -> tuple[int, ...]:
    return tuple(int(t) for t in time) if isinstance(time, list | tuple) else (int(time),)


def buffer_document_reading(doc: dict[str, Any]) -> Reading:
    buffers = doc["buffers"]
    return interval_reading(
        [b["id"] for b in buffers],
        [b["size"] for b in buffers],
        [b["lower"] for b in buffers],
        [b["upper"] for b in buffers],
        doc.get("alignment", 1),
        [b.get("offset", -1) for b in buffers],
    )


# --- Graphs ----------------------------------------------------------------------------------------


def _tensor_bytes(tensor: dict[str, Any]) -> int:
    if "size" in tensor:
        return int(tensor["size"])
    return math.prod(tensor["shape"]) * DTYPE_BYTES[tensor["dtype"]]


def _closure(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """Every (u, v) with operator u before v: program order per core, writer before reader, sync edges."""
    ops = doc["operators"]
    edges: dict[str, set[str]] = {op["id"]: set() for op in ops}
    last_on_core: dict[int, str] = {}
    writer = {t: op["id"] for op in ops for t in op.get("outputs", [])}
    for op in ops:
        core = op.get("core", 0)
        if core in last_on_core:
            edges[last_on_core[core]].add(op["id"])
        last_on_core[core] = op["id"]
        for t in op.get("inputs", []):
            if t in writer:
                edges[writer[t]].add(op["id"])
    for s in doc.get("sync", []):
        edges[s["before"]].add(s["after"])
    closure = set()
    for start in edges:
        stack, seen = list(edges[start]), set()
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(edges[v])
        closure |= {(start, v) for v in seen}
    return closure


class GraphReading:
    """A graph document under the rules: who is touched by which operators, and which writes are legal."""

    def __init__(self, doc: dict[str, Any], keep_outputs: bool, views: bool, inplace: str) -> None:
        ops = doc["operators"]
        base = doc.get("alignment", 1)
        self.closure = _closure(doc)
        self.sizes = {t["id"]: _tensor_bytes(t) for t in doc["tensors"]}
        self.alignment = {t["id"]: math.lcm(base, t.get("alignment", 1)) for t in doc["tensors"]}
        self.pinned = {t["id"]: t["offset"] for t in doc["tensors"] if "offset" in t}
        self.touched: dict[str, set[str]] = {t: set() for t in self.sizes}
        self.outputs_of = {op["id"]: set(op.get("outputs", [])) for op in ops}
        written, read = set(), set()
        for op in ops:
            for t in [*op.get("inputs", []), *op.get("outputs", [])]:
                self.touched[t].add(op["id"])
            written.update(op.get("outputs", []))
            read.update(op.get("inputs", []))
            if op.get("workspace"):
                scratch = op["id"] + "#workspace"
                self.sizes[scratch], self.alignment[scratch] = op["workspace"], base
                self.touched[scratch] = {op["id"]}
        units = {d["id"]: d.get("alignment", 1) for d in doc.get("devices") or []}
        for op in ops:  # a unit's alignment holds for every tensor it reads or writes, and its scratch
            if op.get("device") is not None:
                scratch = [op["id"] + "#workspace"] if op.get("workspace") else []
                for t in [*op.get("inputs", []), *op.get("outputs", []), *scratch]:
                    self.alignment[t] = math.lcm(self.alignment[t], units[op["device"]])
        for t in set(doc.get("inputs") or []) | {
            t for t in self.touched if t not in written and "#" not in t
        }:
            self.touched[t].add(START)
        outputs = doc["outputs"] if doc.get("outputs") is not None else [t for t in written if t not in read]
        if keep_outputs:
            for t in outputs:
                self.touched[t].add(END)
        view_of = {out: host for op in ops for out, host in op.get("views", {}).items()} if views else {}
        self.root = {t: self._follow(view_of, t) for t in self.sizes}
        declared = [
            (out, host, op["id"])
            for op in ops
            for out, hosts in op.get("inplace", {}).items()
            for host in ([hosts] if isinstance(hosts, str) else hosts)
        ]
        legal = [(o, h) for o, h, at in declared if inplace != "never" and self._write_ok(o, h, at)]
        self.chances = list(dict.fromkeys(legal))

    @staticmethod
    def _follow(view_of: dict[str, str], t: str) -> str:
        while t in view_of:
            t = view_of[t]
        return t

    def before(self, p: str, q: str) -> bool:
        if p == END or q == START:
            return False
        return p == START or q == END or (p, q) in self.closure

    def apart(self, x: str, y: str) -> bool:
        tx, ty = self.touched[x], self.touched[y]
        return all(self.before(p, q) for p in tx for q in ty) or all(
            self.before(q, p) for p in tx for q in ty
        )

    def _write_ok(self, out: str, host: str, at: str) -> bool:
        """``out`` may take the bytes of ``host`` at ``at``: no larger, not pinned, the host dies there."""
        if self.sizes[out] > self.sizes[host]:
            return False
        if any(self.root[t] in (self.root[out], self.root[host]) for t in self.pinned):
            return False  # the runtime places a pinned tensor itself
        group = [t for t in self.sizes if self.root[t] == self.root[host]]
        if any(t in self.outputs_of[at] for t in group):
            return False  # a view the operator writes already has the input's bytes: one output each
        return all(p == at or self.before(p, at) for t in group for p in self.touched[t])

    def reading(self) -> Reading:
        return Reading(self.sizes, self.alignment, self.pinned, self.apart, self.root, self.chances)


def graph_reading(
    doc: dict[str, Any], keep_outputs: bool = True, views: bool = True, inplace: str = "auto"
) -> Reading:
    return GraphReading(doc, keep_outputs, views, inplace).reading()


# --- Several models in one pool --------------------------------------------------------------------


def pool_reading(models: Sequence[tuple[str, Reading]], together: str, shared: Sequence[str] = ()) -> Reading:
    """Models one after another (anything of one may reuse another's bytes) or at once (nothing shared).

    Each model's items are named ``MODEL/item``, but a ``shared`` tensor: one item of its own name for
    every model that has it, persisting across them all (live from the first model's start to the last
    one's end), so it shares bytes with nothing live and gives its bytes to no in-place output.
    """
    owner: dict[str, tuple[str, str]] = {}
    combined = Reading({}, {}, {}, lambda x, y: False)
    for model_id, r in models:
        name = {item: item if item in shared else f"{model_id}/{item}" for item in r.sizes}
        for item, full in name.items():
            owner[full] = (model_id, item)
            # a shared tensor is one buffer for every model: aligned as each of them asks
            aligned = math.lcm(r.alignment[item], combined.alignment.get(full, 1))
            combined.sizes[full], combined.alignment[full] = r.sizes[item], aligned
            combined.root[full] = name[r.group_of(item)]
            if item in r.pinned:
                combined.pinned[full] = r.pinned[item]
        combined.chances += [
            (name[o], name[h])
            for o, h in r.chances
            if r.group_of(o) not in shared and r.group_of(h) not in shared
        ]
    readings = dict(models)
    persisting = set(shared)

    def apart(x: str, y: str) -> bool:
        if {combined.root[x], combined.root[y]} & persisting:
            return False
        (mx, ix), (my, iy) = owner[x], owner[y]
        if mx == my:
            return readings[mx].apart(ix, iy)
        return together == "sequential"

    combined.apart = apart
    return combined


# --- Checking a plan -------------------------------------------------------------------------------


def violation(reading: Reading, offsets: dict[str, int], peak: int) -> str | None:
    """The first broken rule of a plan (item -> offset) with its claimed peak, or None."""
    if set(offsets) != set(reading.sizes):
        missing, extra = set(reading.sizes) - set(offsets), set(offsets) - set(reading.sizes)
        return f"the plan's items differ: missing {sorted(missing)}, unknown {sorted(extra)}"
    for item, off in offsets.items():
        if off < 0 or off % reading.alignment[item]:
            return f"{item} at {off}: negative or not a multiple of {reading.alignment[item]}"
        if item in reading.pinned and off != reading.pinned[item]:
            return f"{item} pinned at {reading.pinned[item]}, planned at {off}"
        if off != offsets[reading.group_of(item)]:
            return f"view {item} is not at its input's offset"
    top = max(offsets[i] + reading.sizes[i] for i in offsets)
    if top != peak:
        return f"claimed peak {peak}, but the blocks reach {top}"
    for x, y in itertools.combinations(offsets, 2):
        if offsets[x] >= offsets[y] + reading.sizes[y] or offsets[y] >= offsets[x] + reading.sizes[x]:
            continue
        if reading.group_of(x) == reading.group_of(y) or reading.apart(x, y):
            continue
        pair = {reading.group_of(x), reading.group_of(y)}
        if any(
            {reading.group_of(o), reading.group_of(h)} == pair and offsets[o] == offsets[h]
            for o, h in reading.chances
        ):
            continue
        return f"{x} and {y} share bytes while both live"
    return None


# --- The optimum by brute force --------------------------------------------------------------------


@dataclass
class _Groups:
    """Items merged into blocks (views, taken in-place writes): sizes, alignments, pins and clashes."""

    members: dict[str, list[str]]
    size: dict[str, int]
    align: dict[str, int]
    pin: dict[str, int]
    clash: dict[str, set[str]]


def _groups(reading: Reading, taken: Sequence[tuple[str, str]]) -> _Groups | None:
    group = {i: reading.group_of(i) for i in reading.sizes}
    for out, host in taken:
        old, new = group[out], group[host]
        group = {i: new if g == old else g for i, g in group.items()}
    members: dict[str, list[str]] = {}
    for item, g in group.items():
        members.setdefault(g, []).append(item)
    pin: dict[str, int] = {}
    for g, items in members.items():
        pins = {reading.pinned[i] for i in items if i in reading.pinned}
        if len(pins) > 1:
            return None  # two pins of one block disagree: this set of writes cannot be taken
        if pins:
            pin[g] = pins.pop()
    names = list(members)
    clash: dict[str, set[str]] = {g: set() for g in names}
    for a, b in itertools.combinations(names, 2):
        if any(not reading.apart(x, y) for x in members[a] for y in members[b]):
            clash[a].add(b)
            clash[b].add(a)
    return _Groups(
        members,
        {g: max(reading.sizes[i] for i in m) for g, m in members.items()},
        {g: math.lcm(*(reading.alignment[i] for i in m)) for g, m in members.items()},
        pin,
        clash,
    )


def _lowest_fit(size: int, align: int, ranges: list[tuple[int, int]]) -> int:
    """The lowest multiple of ``align`` where ``size`` bytes miss every range."""
    offset = 0
    for start, end in sorted(ranges):
        if start >= offset + size:
            break
        offset = max(offset, -(-end // align) * align)
    return offset


def _best_first_fit(g: _Groups, bound: int | None) -> tuple[int, dict[str, int]] | None:
    """The smallest peak of first-fit over every order of the free blocks (pinned ones placed first).

    Depth-first over order prefixes, cutting a prefix whose peak already
    reaches the best found (or ``bound``).
    """
    placed = dict(g.pin)
    for a, b in itertools.combinations(placed, 2):
        if b in g.clash[a] and placed[a] < placed[b] + g.size[b] and placed[b] < placed[a] + g.size[a]:
            return None  # pinned blocks overlap while live
    free = [name for name in g.size if name not in placed]
    start_peak = max((placed[p] + g.size[p] for p in placed), default=0)
    best: list[Any] = [bound, None]

    def search(peak: int) -> None:
        if best[0] is not None and peak >= best[0]:
            return
        if len(placed) == len(g.size):
            best[0], best[1] = peak, dict(placed)
            return
        for name in free:
            if name in placed:
                continue
            ranges = [(placed[o], placed[o] + g.size[o]) for o in g.clash[name] if o in placed]
            placed[name] = _lowest_fit(g.size[name], g.align[name], ranges)
            search(max(peak, placed[name] + g.size[name]))
            del placed[name]

    search(start_peak)
    return None if best[1] is None else (best[0], best[1])


def optimum(reading: Reading) -> tuple[int, dict[str, int]]:
    """The smallest peak over every legal set of in-place writes, with a plan (item -> offset) reaching it."""
    best: tuple[int, dict[str, int]] | None = None
    chances = reading.chances
    for k in range(len(chances) + 1):
        for taken in itertools.combinations(chances, k):
            outs = [o for o, _ in taken]
            hosts = [reading.group_of(h) for _, h in taken]
            if len(set(outs)) < k or len(set(hosts)) < k:
                continue  # an output takes one input's bytes, an input gives them to one output
            groups = _groups(reading, taken)
            if groups is None:
                continue
            found = _best_first_fit(groups, None if best is None else best[0])
            if found is not None and (best is None or found[0] < best[0]):
                peak, at = found
                best = peak, {i: at[g] for g, items in groups.members.items() for i in items}
    if best is None:
        raise ValueError("no plan meets the pins")
    return best


def free_blocks(reading: Reading) -> int:
    """Blocks the brute force orders (views merged, pinned ones apart): its cost grows as their factorial."""
    groups = {reading.group_of(i) for i in reading.sizes}
    return len(groups) - len({reading.group_of(i) for i in reading.pinned})


# --- Memories (docs/memories.md) -------------------------------------------------------------------

#: Without given costs, the first memory costs 1 per byte and each next one this many times the one before.
COST_STEP = 10.0


@dataclass(frozen=True)
class MemorySpec:
    """One memory as a document lists it, its defaults filled in."""

    id: str
    capacity: int | None
    alignment: int
    read_cost: float
    write_cost: float


@dataclass
class MemoryReading:
    """An input with memories: its one-arena reading, the memories, pins to them and bytes each item moves."""

    reading: Reading
    memories: list[MemorySpec]
    pinned_memory: dict[str, str]
    written: dict[str, int]
    read: dict[str, int]

    def spec(self, memory: str) -> MemorySpec:
        return next(m for m in self.memories if m.id == memory)


def memory_specs(doc: dict[str, Any]) -> list[MemorySpec]:
    """The memories fastest first: costs default to 1, then 10 times the one before; writes to reads."""
    specs, previous = [], None
    for m in doc["memories"]:
        read = m.get("read_cost", 1.0 if previous is None else previous * COST_STEP)
        specs.append(
            MemorySpec(m["id"], m.get("capacity"), m.get("alignment", 1), read, m.get("write_cost", read))
        )
        previous = read
    return specs


def buffer_memory_reading(doc: dict[str, Any]) -> MemoryReading:
    """A buffer list with memories: each buffer written once and read once."""
    reading = buffer_document_reading(doc)
    sizes = reading.sizes
    pins = {b["id"]: b["memory"] for b in doc["buffers"] if "memory" in b}
    return MemoryReading(reading, memory_specs(doc), pins, dict(sizes), dict(sizes))


def graph_memory_reading(
    doc: dict[str, Any], keep_outputs: bool = True, views: bool = True, inplace: str = "auto"
) -> MemoryReading:
    """A graph with memories: each tensor written once (by its operator, or the caller for a model input;
    a view writes nothing), read once per operator input naming it and once by the caller for a model
    output; a workspace written and read once."""
    reading = graph_reading(doc, keep_outputs, views, inplace)
    ops = doc["operators"]
    written = {t: 0 for t in reading.sizes}
    read = {t: 0 for t in reading.sizes}
    writers = {t for op in ops for t in op.get("outputs", [])}
    readers = {t for op in ops for t in op.get("inputs", [])}
    for op in ops:
        for t in op.get("inputs", []):
            read[t] += reading.sizes[t]
        for t in op.get("outputs", []):
            if not (views and t in op.get("views", {})):
                written[t] += reading.sizes[t]
        if op.get("workspace"):
            scratch = op["id"] + "#workspace"
            written[scratch] += reading.sizes[scratch]
            read[scratch] += reading.sizes[scratch]
    outputs = doc["outputs"] if doc.get("outputs") is not None else [t for t in writers if t not in readers]
    for t in outputs:
        read[t] += reading.sizes[t]
    for t in doc["tensors"]:
        if t["id"] not in writers:
            written[t["id"]] += reading.sizes[t["id"]]
    pins = {t["id"]: t["memory"] for t in doc["tensors"] if "memory" in t}
    return MemoryReading(reading, memory_specs(doc), pins, written, read)


def pool_memory_reading(
    models: Sequence[tuple[str, MemoryReading]], together: str, memories: list[MemorySpec]
) -> MemoryReading:
    """Models pooled across one memory map: each model's items (``MODEL/item``) move the bytes they
    move alone, under their own model's pins."""
    reading = pool_reading([(model_id, mr.reading) for model_id, mr in models], together)
    written, read, pins = {}, {}, {}
    for model_id, mr in models:
        for item in mr.reading.sizes:
            written[f"{model_id}/{item}"] = mr.written[item]
            read[f"{model_id}/{item}"] = mr.read[item]
        pins.update({f"{model_id}/{item}": memory for item, memory in mr.pinned_memory.items()})
    return MemoryReading(reading, memories, pins, written, read)


def access_cost(mr: MemoryReading, memory_of: dict[str, str]) -> float:
    """Bytes written and read, each times the cost per byte of the memory they are in."""
    total = 0.0
    for item in mr.reading.sizes:
        spec = mr.spec(memory_of[item])
        total += mr.written[item] * spec.write_cost + mr.read[item] * spec.read_cost
    return total


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def memory_violation(
    mr: MemoryReading, offsets: dict[str, int], memory_of: dict[str, str], peaks: dict[str, int], cost: float
) -> str | None:
    """The first broken rule of a plan across memories (item -> memory and offset, per memory its peak,
    the total cost), or None: one-arena rules within each memory, capacities, pins, the cost."""
    r = mr.reading
    if set(memory_of) != set(r.sizes):
        return f"the plan's memories name other items: {sorted(set(memory_of) ^ set(r.sizes))}"
    names = [m.id for m in mr.memories]
    if set(peaks) != set(names):
        return f"the plan's memories are {sorted(peaks)}, the document lists {names}"
    for item, memory in memory_of.items():
        if memory not in names:
            return f"{item} in unknown memory {memory!r}"
        if item in mr.pinned_memory and memory != mr.pinned_memory[item]:
            return f"{item} pinned to {mr.pinned_memory[item]}, planned in {memory}"
        if memory != memory_of[r.group_of(item)]:
            return f"view {item} is not in its input's memory"
        spec = mr.spec(memory)
        if offsets.get(item, 0) % spec.alignment:
            return f"{item} at {offsets[item]}: not a multiple of {memory}'s alignment {spec.alignment}"
        if spec.capacity is not None and offsets.get(item, 0) + r.sizes[item] > spec.capacity:
            return f"{item} ends at {offsets[item] + r.sizes[item]}, beyond {memory} ({spec.capacity} bytes)"
    for memory in names:
        items = [i for i in r.sizes if memory_of[i] == memory]
        top = max((offsets[i] + r.sizes[i] for i in items), default=0)
        if top != peaks[memory]:
            return f"{memory}: claimed peak {peaks[memory]}, but its blocks reach {top}"
        if items and (broken := violation(_within(r, items), {i: offsets[i] for i in items}, top)):
            return f"{memory}: {broken}"
    if not _close(cost, access_cost(mr, memory_of)):
        return f"claimed cost {cost}, but the bytes moved cost {access_cost(mr, memory_of)}"
    return None


def _within(r: Reading, items: Sequence[str], alignment: int = 1) -> Reading:
    """The reading of some items alone (one memory's), their offsets also multiples of ``alignment``."""
    keep = set(items)
    return Reading(
        {i: r.sizes[i] for i in items},
        {i: math.lcm(r.alignment[i], alignment) for i in items},
        {i: p for i, p in r.pinned.items() if i in keep},
        r.apart,
        {i: g for i, g in r.root.items() if i in keep},
        [(o, h) for o, h in r.chances if o in keep and h in keep],
    )


def memory_choices(mr: MemoryReading) -> int:
    """How many assignments of blocks to memories :func:`memory_optimum` tries."""
    r = mr.reading
    groups = {r.group_of(item) for item in r.sizes}
    pinned = {r.group_of(item) for item in mr.pinned_memory}
    return len(mr.memories) ** len(groups - pinned)


def memory_optimum(mr: MemoryReading) -> float | None:
    """The least access cost of any plan, by brute force over the memory of each block (view groups
    move together; no in-place chances): the cheapest assignment whose every memory holds its blocks
    within its capacity. None when no assignment fits."""
    r = mr.reading
    if r.chances:
        raise ValueError("the memory brute force takes no in-place chances")
    groups: dict[str, list[str]] = {}
    for item in r.sizes:
        groups.setdefault(r.group_of(item), []).append(item)
    choices = []
    for members in groups.values():
        pins = {mr.pinned_memory[i] for i in members if i in mr.pinned_memory}
        choices.append(sorted(pins) if pins else [m.id for m in mr.memories])
    assignments = []
    for chosen in itertools.product(*choices):
        memory_of = {i: m for members, m in zip(groups.values(), chosen, strict=True) for i in members}
        assignments.append((access_cost(mr, memory_of), memory_of))
    assignments.sort(key=lambda pair: pair[0])
    for cost, memory_of in assignments:
        if all(_fits(mr, spec, [i for i in r.sizes if memory_of[i] == spec.id]) for spec in mr.memories):
            return cost
    return None


def _fits(mr: MemoryReading, spec: MemorySpec, items: list[str]) -> bool:
    if not items or spec.capacity is None:
        return True
    try:
        peak, _ = optimum(_within(mr.reading, items, spec.alignment))
    except ValueError:  # its pins overlap
        return False
    return peak <= spec.capacity
