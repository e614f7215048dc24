"""ONNX import: an ONNX model's activations as a single-core graph document.

Needs the ``onnx`` package (``pip install 'gaplanner[onnx]'``). Shapes come
from ONNX's own shape inference (strict, with data propagation, so shapes
computed by ``Shape``/``Reshape`` chains resolve). The model's weights are
never loaded.

- Blocks: the graph inputs that are not initializers, and every node output.
  Initializers and the outputs of ``Constant`` nodes are weights, not blocks;
  zero-sized tensors need no memory and are left out.
- Operators: the nodes in the model's order (ONNX requires it to be a
  topological order), all on core 0. A node with subgraphs (``If``, ``Loop``,
  ``Scan``) also reads the outer tensors its subgraphs use.
- Sizes: shape x element size; sub-byte types (int4, float4, ...) are
  rounded up to whole bytes per tensor.

- Model inputs and outputs: the graph's inputs (initializers excepted) and
  outputs; the outputs stay intact until the model ends.
- Views: ``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze``, ``Identity``
  and ``Dropout`` (at inference) share their input's bytes, as ONNX Runtime,
  TFLite and ExecuTorch do.
- In-place chances (``inplace=True``): an elementwise operator may write its
  output over an input of the same shape whose bytes are at least as many
  (unary activations, ``Add``/``Sub``/``Mul``/``Div`` and friends when the
  broadcasting is over the other input, ``Cast`` to a type no wider), as ONNX
  Runtime's kernels may; the planner decides whether to take each.

A dimension that shape inference leaves symbolic (``batch``) or unknown makes
the import fail with one line naming the tensor; ``batch=N`` first fixes a
symbolic first dimension of every graph input to ``N``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gaplanner.documents.onnx_dims import fix_batch, fix_dims, has_symbolic_batch, symbols
from gaplanner.documents.schema import DTYPE_BYTES, Document, parse_document
from gaplanner.errors import InputError

#: ONNX element type name -> gaplanner dtype name.
_DTYPES = {
    "FLOAT": "float32",
    "UINT8": "uint8",
    "INT8": "int8",
    "UINT16": "uint16",
    "INT16": "int16",
    "INT32": "int32",
    "INT64": "int64",
    "BOOL": "bool",
    "FLOAT16": "float16",
    "DOUBLE": "float64",
    "UINT32": "uint32",
    "UINT64": "uint64",
    "COMPLEX64": "complex64",
    "COMPLEX128": "complex128",
    "BFLOAT16": "bfloat16",
    "FLOAT8E4M3FN": "float8_e4m3",
    "FLOAT8E4M3FNUZ": "float8_e4m3",
    "FLOAT8E5M2": "float8_e5m2",
    "FLOAT8E5M2FNUZ": "float8_e5m2",
    "FLOAT8E8M0": "float8",
}
#: Element types narrower than a byte: bits per element (sizes rounded up per tensor).
_SUB_BYTE_BITS = {
    "UINT4": 4,
    "INT4": 4,
    "FLOAT4E2M1": 4,
    "UINT2": 2,
    "INT2": 2,
    "FLOAT6E2M3": 6,
    "FLOAT6E3M2": 6,
}


#: Operators whose first output is a view of their first input (same bytes, no copy).
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
#: Elementwise operators whose output may be written over an input of the same shape.
INPLACE_OPS = frozenset(
    {
        "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BitwiseAnd", "BitwiseNot",
        "BitwiseOr", "BitwiseXor", "Cast", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Div", "Elu", "Erf", "Exp",
        "Floor", "Gelu", "HardSigmoid", "HardSwish", "LeakyRelu", "Log", "Max", "Mean", "Min", "Mish", "Mod",
        "Mul", "Neg", "Not", "Or", "Pow", "PRelu", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign",
        "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu",
        "Xor",
    }
)  # fmt: skip


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise InputError(
            "ONNX import needs the onnx package: pip install 'gaplanner[onnx]'", "input"
        ) from None
    return onnx


def _outer_reads(graph: Any) -> set[str]:
    """Names a subgraph reads from its enclosing scopes."""
    defined = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    reads: set[str] = set()
    for node in graph.node:
        reads.update(name for name in node.input if name and name not in defined)
        for sub in _subgraphs(node):
            reads.update(name for name in _outer_reads(sub) if name not in defined)
        defined.update(node.output)
    reads.update(v.name for v in graph.output if v.name not in defined)
    return reads


def _subgraphs(node: Any) -> Iterable[Any]:
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.g
        yield from attr.graphs


def node_reads(node: Any) -> list[str]:
    """Tensor names a node reads: its inputs, then what its subgraphs read from outside."""
    names = [name for name in node.input if name]
    for sub in _subgraphs(node):
        names += sorted(_outer_reads(sub))
    return list(dict.fromkeys(names))


def _check_topological(graph: Any) -> None:
    defined = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    for k, node in enumerate(graph.node):
        for m, name in enumerate(node_reads(node)):
            if name not in defined:
                raise InputError(
                    f"node {node.name or node.op_type!r} reads tensor {name!r}, which no earlier node "
                    "writes (ONNX nodes must be in topological order)",
                    f"graph.node[{k}].input[{m}]",
                )
        defined.update(node.output)


def _describe_shape(dims: Any) -> str:
    parts = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
    return "[" + ", ".join(parts) + "]"


def _tensor_entry(
    onnx: Any, name: str, value: Any, field: str, symbolic_batch: bool, named: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    """The document tensor for a value, or None when it holds no bytes."""
    if value is None or not value.type.HasField("tensor_type"):
        kind = "no type" if value is None else f"a non-tensor type ({value.type.WhichOneof('value')})"
        raise InputError(f"shape inference gives tensor {name!r} {kind}; only tensors can be planned", field)
    tensor_type = value.type.tensor_type
    if tensor_type.elem_type not in onnx.TensorProto.DataType.values():
        raise InputError(
            f"tensor {name!r} has element type {tensor_type.elem_type}, which ONNX does not define", field
        )
    elem = onnx.TensorProto.DataType.Name(tensor_type.elem_type)
    if not tensor_type.HasField("shape"):
        raise InputError(f"tensor {name!r} has an unknown rank: shape inference cannot resolve it", field)
    dims = tensor_type.shape.dim
    if any(not d.HasField("dim_value") for d in dims):
        # Only the model's own symbols (on its inputs) can be named; shape inference invents others.
        symbols = [d.dim_param for d in dims if not d.HasField("dim_value") and d.dim_param in named]
        if symbolic_batch:
            others = [symbol for symbol in symbols if symbol != dims[0].dim_param]
            hint = "; fix the inputs' symbolic batch size with --batch N"
            hint += f" and the other symbols by name, --dim {others[0]}=N" if others else ""
        elif symbols:
            hint = f"; fix it with --dim {symbols[0]}=N"
        else:
            hint = (
                "; the model's inputs are static, so its value depends on data shape inference cannot "
                "compute (a shape computed at run time)"
            )
        raise InputError(
            f"tensor {name!r} has a dynamic shape {_describe_shape(dims)} that shape inference "
            f"cannot resolve{hint}",
            field,
        )
    shape = [int(d.dim_value) for d in dims]
    if math.prod(shape) == 0:
        return None
    if elem in _DTYPES:
        return {"id": name, "shape": shape, "dtype": _DTYPES[elem]}
    if elem in _SUB_BYTE_BITS:
        return {"id": name, "size": -(-math.prod(shape) * _SUB_BYTE_BITS[elem] // 8)}
    raise InputError(f"tensor {name!r} has element type {elem}, which has no fixed size", field)


def _load(onnx: Any, source: str | Path | Any) -> Any:
    if not isinstance(source, str | Path):
        return source
    path = Path(source)
    if path.is_dir():
        raise InputError(f"{path} is a directory, not an ONNX file", "input")
    if not path.is_file():
        raise InputError(f"no such file: {path}", "input")
    if path.stat().st_size == 0:
        raise InputError(f"{path.name} is empty (0 bytes), not an ONNX model", "input")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError and friends for non-ONNX bytes
        raise InputError(f"{path.name} is not an ONNX model ({type(exc).__name__}: {exc})", "input") from None
    # Protobuf reads many byte strings as a message with no fields: every exporter sets both of these.
    if not model.ir_version or not model.HasField("graph"):
        missing = "IR version" if not model.ir_version else "graph"
        raise InputError(f"{path.name} is not an ONNX model (it has no {missing})", "input")
    return model


def _bytes(entry: dict[str, Any]) -> int:
    return entry["size"] if "size" in entry else math.prod(entry["shape"]) * DTYPE_BYTES[entry["dtype"]]


def _aliases(
    node: Any, inputs: list[str], outputs: list[str], tensors: dict[str, Any], inplace: bool
) -> dict[str, Any]:
    """The node's declared views and in-place chances, as operator fields."""
    fields: dict[str, Any] = {}
    standard = node.domain in ("", "ai.onnx")
    first_in = node.input[0] if node.input else ""
    if standard and node.op_type in VIEW_OPS and first_in in inputs and node.output[0] in outputs:
        if _bytes(tensors[first_in]) == _bytes(tensors[node.output[0]]):
            fields["views"] = {node.output[0]: first_in}
    elif inplace and standard and node.op_type in INPLACE_OPS and len(outputs) == 1:
        out = tensors[outputs[0]]
        hosts = [
            t
            for t in dict.fromkeys(inputs)
            if tensors[t].get("shape") == out.get("shape") and _bytes(tensors[t]) >= _bytes(out)
        ]
        if hosts:
            fields["inplace"] = {outputs[0]: hosts}
    return fields


#: Rounds of folding and shape inference at most: each round's shapes let the next fold more.
MAX_FOLD_ROUNDS = 4


def fold_constants(model: Any) -> Any:
    """The model with its constant computations folded, as ONNX Runtime's basic level does.

    Exporters (PyTorch's TorchScript one, say) compute shapes at run time with
    ``Shape``/``Gather``/``Concat`` chains that ONNX shape inference does not
    evaluate; onnxscript's constant folding evaluates them, so the shapes become
    static and the folded values become constants (weights, not planned). A
    shape computed from a tensor whose own shape only became known by folding
    (Swin's padded windows) needs another round: fold, infer shapes, fold again,
    while a round still removes nodes and some shape is still unknown. No
    other rewriting is done: every other node is planned as exported. Without
    onnxscript, or when it cannot handle the model, the model is returned as it
    was (shape inference then says which tensor stays unknown).
    """
    try:
        import onnx_ir
        from onnxscript.optimizer import fold_constants as fold
    except ImportError:
        return model
    onnx = _onnx()
    for _ in range(MAX_FOLD_ROUNDS):
        nodes = len(model.graph.node)
        try:
            folded = onnx_ir.serde.deserialize_model(model)
            # every node: the folder's default skips shape chains like Where(Equal(..))
            fold(folded, should_fold=lambda node: True)
            model = onnx_ir.serde.serialize_model(folded)
        except Exception:  # the folder's own limits: plan the model as it stands
            return model
        if len(model.graph.node) == nodes or not _forget_unknown_shapes(model):
            return model
        try:
            model = onnx.shape_inference.infer_shapes(model, data_prop=True)
        except Exception:  # inconsistent: the strict inference after folding says where
            return model
    return model


def _forget_unknown_shapes(model: Any) -> bool:
    """Forget the shapes that are not fully known (value infos, outputs' shapes); whether there were any.

    Shape inference keeps a shape it finds written rather than its own result, so
    one written before a fold would hide the static shape the fold made known.
    """
    graph = model.graph
    known = [v for v in graph.value_info if _static(v)]
    unknown_outputs = [v for v in graph.output if not _static(v)]
    if len(known) == len(graph.value_info) and not unknown_outputs:
        return False
    del graph.value_info[:]
    graph.value_info.extend(known)
    for value in unknown_outputs:
        value.type.tensor_type.ClearField("shape")
    return True


def _static(value: Any) -> bool:
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type" or not value.type.tensor_type.HasField("shape"):
        return kind != "tensor_type"
    return all(dim.HasField("dim_value") for dim in value.type.tensor_type.shape.dim)


def _inferred_model(
    onnx: Any, source: str | Path | Any, batch: int | None, dims: Any, fold: bool
) -> tuple[Any, bool, Any]:
    """A copy of the model (the caller's is never modified), its dimensions fixed, constants folded,
    shapes inferred; whether its batch dimension was symbolic, and its inputs' named symbols."""
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise InputError(f"the batch size must be a positive integer, got {batch!r}", "batch")
    model = onnx.ModelProto()
    model.CopyFrom(_load(onnx, source))
    _check_topological(model.graph)
    if dims:
        fix_dims(model, dims)
    if batch is not None:
        fix_batch(model, batch)
    symbolic_batch = has_symbolic_batch(model)
    named = symbols(model.graph.input)
    if fold:
        model = fold_constants(model)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception as exc:  # InferenceError, ValidationError: the model itself is inconsistent
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"ONNX shape inference failed: {first_line}", "input") from None
    return model, symbolic_batch, named


def import_onnx(
    source: str | Path | Any,
    batch: int | None = None,
    name: str | None = None,
    inplace: bool = True,
    fold: bool = True,
    dims: Mapping[str, int] | None = None,
) -> Document:
    """A graph document from an ONNX model (a path or a ``ModelProto``), see the module doc.

    ``batch`` fixes the inputs' symbolic first dimension, ``dims`` any by name
    (``{"sequence": 128}``). ``inplace=False`` declares no in-place chances,
    for a backend whose kernels cannot write over their inputs. ``fold=False``
    plans the nodes as exported, without folding constants (:func:`fold_constants`).
    """
    onnx = _onnx()
    model, symbolic_batch, named = _inferred_model(onnx, source, batch, dims, fold)
    graph = model.graph
    values = {v.name: v for v in [*graph.value_info, *graph.input, *graph.output]}
    weights = {init.name for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            weights.update(node.output)

    tensors: dict[str, dict[str, Any] | None] = {}  # None: a zero-sized tensor, left out
    for k, value in enumerate(graph.input):
        if value.name not in weights:
            tensors[value.name] = _tensor_entry(
                onnx, value.name, value, f"graph.input[{k}]", symbolic_batch, named
            )

    operators: list[dict[str, Any]] = []
    op_ids: set[str] = set()
    read: set[str] = set()
    for k, node in enumerate(graph.node):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            continue
        op_id = node.name or f"{node.op_type}_{k}"
        if op_id in op_ids:
            op_id = f"{op_id}_{k}"
        op_ids.add(op_id)
        inputs: list[str] = []
        for tensor_name in node_reads(node):  # defined earlier: checked before shape inference
            if tensor_name not in weights and tensors[tensor_name] is not None:
                inputs.append(tensor_name)
                read.add(tensor_name)
        outputs: list[str] = []
        for m, tensor_name in enumerate(node.output):
            if not tensor_name:
                continue
            field = f"graph.node[{k}].output[{m}]"
            tensors[tensor_name] = entry = _tensor_entry(
                onnx, tensor_name, values.get(tensor_name), field, symbolic_batch, named
            )
            if entry is not None:
                outputs.append(tensor_name)
        op = {"id": op_id, "inputs": inputs, "outputs": outputs, "core": 0}
        operators.append(op | _aliases(node, inputs, outputs, tensors, inplace))

    written = {t for op in operators for t in op["outputs"]}
    planned = {tid for tid, entry in tensors.items() if entry is not None and (tid in written or tid in read)}
    if not operators:
        raise InputError("the ONNX graph has no operators besides constants", "graph.node")
    label = name or graph.name or (Path(source).stem if isinstance(source, str | Path) else None)
    return parse_document(
        {
            "name": label,
            "tensors": [tensors[tid] for tid in tensors if tid in planned],
            "operators": operators,
            "inputs": [v.name for v in graph.input if v.name in planned and v.name not in written],
            "outputs": list(dict.fromkeys(v.name for v in graph.output if v.name in planned)),
        }
    )
