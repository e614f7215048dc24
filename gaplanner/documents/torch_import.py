"""PyTorch import: a ``torch.export`` ExportedProgram's activations as a single-core graph document.

Needs ``torch`` (``pip install 'gaplanner[torch]'``). The program is read as it
was exported, operator by operator in graph order; its weights are never
touched.

- Blocks: the user inputs and every tensor an operator writes, sized from the
  tensor metadata torch.export records (``node.meta["val"]``). Parameters,
  buffers and constants are not planned, and neither is anything that shares
  their bytes (a transposed weight, a mutated buffer). Zero-sized tensors
  need no memory and are left out; tensors of an operator's tuple output are
  named ``NODE.k``.
- Model inputs and outputs: the user inputs, and the program's outputs (user
  outputs and the new values of mutated inputs and buffers, which the caller
  copies back after the last operator).
- Views, from each operator's alias annotations (``Tensor(a)`` in its
  schema): an output that aliases an input shares its bytes: ``view``,
  ``transpose``, ``permute``, ``expand``, ``slice``, ``select``, ``split``,
  ``detach``... An operator that may return either an alias or a copy
  (``reshape``, ``flatten``, ``contiguous``, ``to``) counts as a view only
  when the metadata shows it can alias (a contiguous input, the same dtype
  and element count). An operator that writes an input (``Tensor(a!)``, e.g.
  ``add_``) returns that input's bytes: a view too. A view is listed with its
  base's bytes, the block it shares.
- In-place chances (``inplace=True``): a functional operator that has an
  in-place variant writing its first input (``relu`` and ``relu_``, ``add``
  and ``add_``) may write its output over that input when both have the same
  shape and dtype; the planner decides whether to.
- Mutation order (``after``): an operator that writes an input in place
  (``add_``, ``copy_``, a buffer's update, an optimizer-style step) keeps its
  place among the operators on the same bytes, planned or a weight's: it runs
  after those before it in the program and before those after it. An
  operator that writes only a weight is kept for that, with no tensors.
- Training programs: a joint forward + backward program
  (``torch.export.experimental._export_forward_backward``) imports the same
  way; its outputs are the loss, the parameters' gradients and the buffers'
  new values, all kept until the program ends.
- Symbolic sizes: a dimension exported as dynamic is planned at its upper
  bound (``torch.export.Dim(..., max=N)``); one without an upper bound makes
  the import fail with one line naming the tensor.
"""

from __future__ import annotations

import logging
import math
import operator
from pathlib import Path
from typing import Any

from gaplanner.documents.schema import DTYPE_BYTES, Document, parse_document
from gaplanner.errors import InputError

#: torch dtype names that differ from gaplanner's.
_DTYPE_NAMES = {
    "float8_e4m3fn": "float8_e4m3",
    "float8_e4m3fnuz": "float8_e4m3",
    "float8_e5m2fnuz": "float8_e5m2",
}


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise InputError(
            "PyTorch import needs torch: pip install torch==2.13.0 'gaplanner[torch]'", "input"
        ) from None
    return torch


def load_exported_program(path: str | Path) -> Any:
    """A saved ExportedProgram (``torch.export.save``), or one clear error."""
    torch = _torch()
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {path}", "input")
    quiet = logging.getLogger("torch.export")  # it logs a traceback before raising: one line is enough
    level, quiet.level = quiet.level, logging.CRITICAL
    try:
        program = torch.export.load(str(path))
    except Exception as exc:  # a zip of something else, a pickle, random bytes: torch raises many kinds
        raise InputError(
            f"{path.name} is not a saved ExportedProgram (torch.export.save): {_root_cause(exc)}", "input"
        ) from None
    finally:
        quiet.setLevel(level)
    if not isinstance(program, torch.export.ExportedProgram):
        raise InputError(f"{path.name} holds a {type(program).__name__}, not an ExportedProgram", "input")
    return program


def _root_cause(exc: BaseException) -> str:
    """The first sentence of the innermost error (torch wraps the telling one in a generic one)."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    text = str(exc).strip()
    return text.splitlines()[0].split(". ")[0] if text else type(exc).__name__


def from_exported_program(
    program: Any, name: str | None = None, inplace: bool = True, alignment: int = 16
) -> Document:
    """A graph document from an ExportedProgram (see the module doc).

    ``inplace=False`` declares no in-place chances, for a backend whose kernels
    cannot write over their inputs. ``alignment``: every tensor's offset is a
    multiple of it (16 bytes by default, as ExecuTorch aligns).
    """
    torch = _torch()
    if not isinstance(program, torch.export.ExportedProgram):
        raise InputError(f"expected a torch.export.ExportedProgram, got {type(program).__name__}", "input")
    return _Importer(torch, program, inplace).document(name, alignment)


class _Importer:
    """One pass over the program's graph, collecting tensors and operators."""

    def __init__(self, torch: Any, program: Any, inplace: bool) -> None:
        self.torch, self.program, self.inplace = torch, program, inplace
        self.ranges = dict(program.range_constraints)
        self.tensors: dict[str, dict[str, Any]] = {}
        self.bytes: dict[str, int] = {}
        self.root: dict[str, str] = {}  # tensor id -> the tensor whose bytes it shares (itself if none)
        self.names: dict[tuple[Any, tuple[int, ...]], str] = {}  # (node, index path) -> tensor id
        #: values sharing a weight's (parameter's, buffer's, constant's) bytes -> that weight's name
        self.weights: dict[tuple[Any, tuple[int, ...]], str] = {}
        self.operators: list[dict[str, Any]] = []
        self.mutations = _MutationOrder()

    def document(self, name: str | None, alignment: int) -> Document:
        signature = self.program.graph_signature
        user_inputs = set(signature.user_inputs)
        inputs = []
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                if node.name in user_inputs:
                    inputs += self._add_values(node, "the input")
                else:
                    self.weights.update(
                        ((node, path), node.name) for path, _ in _tensor_leaves(self.torch, node)
                    )
            elif node.op == "call_function" and node.target is not operator.getitem:
                self._add_operator(node)
        outputs = self._outputs()
        used = {t for op in self.operators for t in (*op["inputs"], *op["outputs"])}
        if not self.operators:
            raise InputError("the program has no operator on tensors to plan", "graph")
        return parse_document(
            {
                "name": name,
                "alignment": alignment,
                "tensors": [entry for tid, entry in self.tensors.items() if tid in used],
                "operators": self.operators,
                "inputs": [t for t in dict.fromkeys(inputs) if t in used],
                "outputs": [t for t in dict.fromkeys(outputs) if t in used],
            }
        )

    def _outputs(self) -> list[str]:
        output = next(node for node in self.program.graph.nodes if node.op == "output")
        ids = []
        for value in self.torch.utils._pytree.tree_leaves(output.args[0]):
            if isinstance(value, self.torch.fx.Node):
                key = _resolve(value, ())
                if key in self.names:
                    ids.append(self.names[key])
        return ids

    def _add_values(self, node: Any, what: str) -> list[str]:
        """A tensor for each tensor in ``node``'s value; returns their ids."""
        return [
            t for path, value in _tensor_leaves(self.torch, node) if (t := self._add(node, path, value, what))
        ]

    def _add(self, node: Any, path: tuple[int, ...], value: Any, what: str) -> str | None:
        """The tensor for one value (None for a zero-sized one)."""
        tid = ".".join([node.name, *map(str, path)])
        what = f"{what} {tid!r}"
        size = self._footprint(value, what)
        if size == 0:
            return None
        entry: dict[str, Any] = {"id": tid, "size": size}
        dtype = str(value.dtype).removeprefix("torch.")
        dtype = _DTYPE_NAMES.get(dtype, dtype)
        shape = [self._upper(d, what) for d in value.shape]
        if dtype in DTYPE_BYTES and math.prod(shape) * DTYPE_BYTES[dtype] == size:
            entry = {"id": tid, "shape": shape, "dtype": dtype}
        self._record(node, path, entry, size)
        return tid

    def _record(
        self, node: Any, path: tuple[int, ...], entry: dict[str, Any], size: int, host: str | None = None
    ) -> None:
        tid = entry["id"]
        self.tensors[tid], self.bytes[tid] = entry, size
        self.names[(node, path)] = tid
        self.root[tid] = tid if host is None else self.root[host]

    def _add_operator(self, node: Any) -> None:
        reads = []
        for arg in self.torch.utils._pytree.tree_leaves((node.args, node.kwargs)):
            if isinstance(arg, self.torch.fx.Node) and (key := _resolve(arg, ())) in self.names:
                reads.append(self.names[key])
        aliases = self._aliased_arguments(node)
        views: dict[str, str] = {}
        outputs: list[str] = []
        for path, value in _tensor_leaves(self.torch, node):
            source = aliases.get(path, aliases.get(path[:1]))
            host_key = None if source is None else _resolve(source, ())
            if host_key in self.weights:
                self.weights[(node, path)] = self.weights[host_key]
            elif host_key in self.names:
                host = self.names[host_key]
                tid = ".".join([node.name, *map(str, path)])
                self._record(node, path, {"id": tid, "size": self.bytes[host]}, self.bytes[host], host)
                views[tid] = host
                outputs.append(tid)
            elif tid := self._add(node, path, value, f"the output of {node.name!r},"):
                outputs.append(tid)
        reads = list(dict.fromkeys(reads))
        written = self._storages(self._written_arguments(node))
        if not reads and not outputs and not written:
            return
        op: dict[str, Any] = {"id": node.name, "inputs": reads, "outputs": outputs, "core": 0}
        if views:
            op["views"] = views
        touched = self._storages(self.torch.utils._pytree.tree_leaves((node.args, node.kwargs)))
        producers = {key[0].name for arg in node.all_input_nodes if (key := _resolve(arg, ())) in self.names}
        if after := [k for k in self.mutations.visit(node.name, touched, written) if k not in producers]:
            op["after"] = after
        if chances := self._inplace_chances(node, reads, outputs, views):
            op["inplace"] = chances
        self.operators.append(op)

    def _storages(self, values: list[Any]) -> set[str]:
        """The bytes the argument nodes among ``values`` lie in: a planned tensor's root or a weight."""
        found = set()
        for value in values:
            if not isinstance(value, self.torch.fx.Node):
                continue
            key = _resolve(value, ())
            if key in self.names:
                found.add("tensor " + self.root[self.names[key]])
            elif key in self.weights:
                found.add("weight " + self.weights[key])
        return found

    def _written_arguments(self, node: Any) -> list[Any]:
        """The arguments the operator writes in place (``Tensor(a!)`` in its schema)."""
        schema = getattr(node.target, "_schema", None)
        if schema is None:
            return []
        written = []
        for k, argument in enumerate(schema.arguments):
            if argument.alias_info is not None and argument.alias_info.is_write:
                value = node.args[k] if k < len(node.args) else node.kwargs.get(argument.name)
                written += self.torch.utils._pytree.tree_leaves(value)
        return written

    def _aliased_arguments(self, node: Any) -> dict[tuple[int, ...], Any]:
        """Per return (``()`` for a single one, else ``(k,)``), the argument node whose bytes it returns.

        From the schema's alias sets: ``Tensor(a)`` returns alias the ``Tensor(a)``
        argument, ``Tensor(a!)`` ones the argument they write, the elements of a
        ``Tensor(a)[]`` return (split, unbind) the ``Tensor(a -> *)`` argument.
        """
        schema = getattr(node.target, "_schema", None)
        if schema is None:
            return {}
        by_set: dict[frozenset[str], tuple[bool, Any]] = {}
        wildcard = None
        for k, argument in enumerate(schema.arguments):
            value = node.args[k] if k < len(node.args) else node.kwargs.get(argument.name)
            if argument.alias_info is None or not isinstance(value, self.torch.fx.Node):
                continue
            by_set[frozenset(argument.alias_info.before_set)] = (argument.alias_info.is_write, value)
            if "*" in argument.alias_info.after_set:
                wildcard = value
        aliased: dict[tuple[int, ...], Any] = {}
        for k, ret in enumerate(schema.returns):
            key = () if len(schema.returns) == 1 else (k,)
            found = by_set.get(frozenset(ret.alias_info.before_set)) if ret.alias_info is not None else None
            if found is not None and (found[0] or self._surely_aliases(node, found[1])):
                aliased[key] = found[1]
            elif ret.alias_info is not None and str(ret.type).startswith("List") and wildcard is not None:
                count = len(_tensor_leaves(self.torch, node))
                aliased |= {(*key, j): wildcard for j in range(count)}
        return aliased

    def _surely_aliases(self, node: Any, argument: Any) -> bool:
        """A ``Tensor(a)`` return always aliases, unless the operator is a composite that may copy.

        Such a composite (reshape, flatten, contiguous, to) aliases when its
        result is what viewing the argument with the result's shape gives.
        """
        if not node.target.has_kernel_for_dispatch_key(self.torch._C.DispatchKey.CompositeImplicitAutograd):
            return True
        source, result = argument.meta.get("val"), node.meta.get("val")
        if not (isinstance(source, self.torch.Tensor) and isinstance(result, self.torch.Tensor)):
            return False
        if source.dtype != result.dtype:
            return False
        try:
            view = source.view(result.shape)
        except (RuntimeError, ValueError):  # no view has that shape: the composite copies
            return False
        return view.stride() == result.stride() and view.storage_offset() == result.storage_offset()

    def _inplace_chances(
        self, node: Any, reads: list[str], outputs: list[str], views: dict[str, str]
    ) -> dict[str, str]:
        """``{output: first input}`` when the operator has an in-place variant that could write there.

        The input must hold its bytes alone among the operator's inputs (an
        elementwise kernel reading another view of them while writing would
        clobber it) and lay them out as the output would: contiguous from the
        start of its block, the same shape, strides and dtype.
        """
        if not self.inplace or len(outputs) != 1 or views or not node.args:
            return {}
        first = node.args[0]
        if not isinstance(first, self.torch.fx.Node) or (key := _resolve(first, ())) not in self.names:
            return {}
        host = self.names[key]
        if not _has_inplace_variant(self.torch, node.target):
            return {}
        if sum(self.root[t] == self.root[host] for t in reads) > 1:
            return {}
        source, result = first.meta.get("val"), node.meta.get("val")
        if not (isinstance(source, self.torch.Tensor) and isinstance(result, self.torch.Tensor)):
            return {}
        same_layout = source.shape == result.shape and source.stride() == result.stride()
        if not same_layout or source.dtype != result.dtype or source.storage_offset() != 0:
            return {}
        if not source.is_contiguous():
            return {}
        return {outputs[0]: host}

    def _upper(self, value: Any, what: str) -> int:
        """An integer, or a symbolic size's upper bound from the program's range constraints."""
        if isinstance(value, int):
            return value
        import sympy
        from torch.utils._sympy.value_ranges import bound_sympy

        expr = value.node.expr
        upper = bound_sympy(expr, self.ranges).upper
        if not isinstance(upper, sympy.Integer):  # torch's int_oo: the export gave no maximum
            raise InputError(
                f"{what} has a dynamic size {expr} without an upper bound; export it with "
                "torch.export.Dim(name, max=N)",
                "shape",
            )
        return int(upper)

    def _footprint(self, value: Any, what: str) -> int:
        """Bytes from the start of the tensor's storage to its last element."""
        shape = [self._upper(d, what) for d in value.shape]
        if math.prod(shape) == 0:
            return 0
        strides = [abs(self._upper(s, what)) for s in value.stride()]
        last = self._upper(value.storage_offset(), what) + sum(
            (d - 1) * s for d, s in zip(shape, strides, strict=True)
        )
        return (last + 1) * value.element_size()


class _MutationOrder:
    """The order an in-place write keeps with the other operators on the same bytes.

    A write runs after every operator that touched those bytes before it in the
    program (they read the old value), and every later operator touching them
    runs after it (it reads the new value). Writes to weights (a mutated buffer,
    an optimizer-style update) count, though weights are not planned.
    """

    def __init__(self) -> None:
        self.last_write: dict[str, str] = {}
        self.readers: dict[str, list[str]] = {}

    def visit(self, op: str, touched: set[str], written: set[str]) -> list[str]:
        """The operators ``op`` must run after, for its place among the writes; records ``op``."""
        before: list[str] = []
        for storage in sorted(touched - written):
            if storage in self.last_write:
                before.append(self.last_write[storage])
            self.readers.setdefault(storage, []).append(op)
        for storage in sorted(written):
            before += self.readers.get(storage, [])
            if storage in self.last_write:
                before.append(self.last_write[storage])
            self.last_write[storage], self.readers[storage] = op, []
        return [k for k in dict.fromkeys(before) if k != op]


def _resolve(node: Any, path: tuple[int, ...]) -> tuple[Any, tuple[int, ...]]:
    """``getitem`` chains down to the operator that wrote the value, with the index path into it."""
    while node.op == "call_function" and node.target is operator.getitem:
        node, path = node.args[0], (node.args[1], *path)
    return node, path


def _tensor_leaves(torch: Any, node: Any) -> list[tuple[tuple[int, ...], Any]]:
    """The tensors in ``node.meta["val"]`` with their index paths (``()`` for a single tensor)."""
    value = node.meta.get("val")
    if isinstance(value, torch.Tensor):
        return [((), value)]
    if isinstance(value, list | tuple):
        leaves = []
        for k, item in enumerate(value):
            if isinstance(item, torch.Tensor):
                leaves.append(((k,), item))
            elif isinstance(item, list | tuple):
                leaves += [((k, j), sub) for j, sub in enumerate(item) if isinstance(sub, torch.Tensor)]
        return leaves
    return []


def _has_inplace_variant(torch: Any, target: Any) -> bool:
    """The operator has an overload of the same name plus ``_`` whose first argument it writes."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.name.startswith("aten::") or schema.name.endswith("_"):
        return False
    packet = getattr(torch.ops.aten, schema.name.removeprefix("aten::") + "_", None)
    variant = getattr(packet, schema.overload_name or "default", None) if packet is not None else None
    arguments = getattr(getattr(variant, "_schema", None), "arguments", None)
    return bool(arguments and arguments[0].alias_info is not None and arguments[0].alias_info.is_write)
