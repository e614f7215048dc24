"""Symbolic dimensions of an ONNX model (``batch``, ``seq``) given the values a user names.

Exported models usually leave the batch (and often the sequence length)
symbolic; a plan needs every size. :func:`fix_batch` gives the graph inputs'
first dimension a value, :func:`fix_dims` any named dimension, both before
shape inference runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gaplanner.errors import InputError


def symbols(values: Iterable[Any]) -> frozenset[str]:  # the named (symbolic) dimensions of their shapes
    shapes = (v.type.tensor_type.shape.dim for v in values if v.type.HasField("tensor_type"))
    return frozenset(dim.dim_param for dims in shapes for dim in dims if dim.HasField("dim_param"))


def fix_dims(model: Any, dims: Mapping[str, int]) -> None:
    """Give every dimension named by a symbol of ``dims`` (``{"seq": 128}``) its value."""
    values = [*model.graph.input, *model.graph.output, *model.graph.value_info]
    present = symbols(values)
    for symbol, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InputError(f"dimension {symbol!r} must be a positive integer, got {size!r}", "dims")
        if symbol not in present:
            known = ", ".join(sorted(present)) or "none"
            raise InputError(f"the model has no symbolic dimension {symbol!r} (it has: {known})", "dims")
    for value in values:
        if value.type.HasField("tensor_type"):
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param in dims:
                    dim.dim_value = dims[dim.dim_param]


def fix_batch(model: Any, batch: int) -> None:
    """Give the graph inputs' symbolic or unknown first dimension (and that symbol anywhere) ``batch``."""
    initializers = {init.name for init in model.graph.initializer}
    symbols: set[str] = set()
    for value in model.graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            if dims[0].HasField("dim_param"):
                symbols.add(dims[0].dim_param)
            dims[0].dim_value = batch
    for value in [*model.graph.input, *model.graph.output, *model.graph.value_info]:
        if value.type.HasField("tensor_type"):
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param in symbols:
                    dim.dim_value = batch


def has_symbolic_batch(model: Any) -> bool:
    """Whether a graph input's first dimension is symbolic or unknown (what ``--batch`` fixes)."""
    initializers = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            return True
    return False
