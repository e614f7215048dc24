"""Random small graph documents for the order tests: views, in-place chances, workspaces, ``after`` edges."""

from __future__ import annotations

from hypothesis import strategies as st

from gaplanner.documents.schema import Document, parse_document


@st.composite
def graph_documents(draw: st.DrawFn, max_ops: int = 8) -> Document:
    """An acyclic single-core graph listed in a valid order: operators read tensors written before them."""
    n_ops = draw(st.integers(1, max_ops))
    tensors: list[dict] = [{"id": "in0", "size": draw(st.integers(1, 9))}]
    operators: list[dict] = []
    for k in range(n_ops):
        available = [t["id"] for t in tensors]
        inputs = draw(st.lists(st.sampled_from(available), max_size=2, unique=True))
        outputs = [f"t{k}_{m}" for m in range(draw(st.integers(0 if inputs else 1, 2)))]
        sizes = {o: draw(st.integers(1, 9)) for o in outputs}
        op: dict = {"id": f"op{k}", "inputs": inputs, "outputs": outputs}
        if inputs and outputs and draw(st.integers(0, 3)) == 0:
            host = next(t for t in tensors if t["id"] == inputs[0])
            sizes[outputs[0]] = host["size"]
            op["views"] = {outputs[0]: inputs[0]}
        elif inputs and outputs and draw(st.booleans()):
            op["inplace"] = {outputs[-1]: inputs}
        if draw(st.integers(0, 4)) == 0:
            op["workspace"] = draw(st.integers(1, 9))
        if k and draw(st.integers(0, 4)) == 0:
            op["after"] = [f"op{draw(st.integers(0, k - 1))}"]
        tensors += [{"id": o, "size": s} for o, s in sizes.items()]
        operators.append(op)
    used = {t for op in operators for t in op["inputs"] + op["outputs"]}
    doc: dict = {"tensors": [t for t in tensors if t["id"] in used], "operators": operators}
    written = [o for op in operators for o in op["outputs"]]
    if written and draw(st.booleans()):
        doc["outputs"] = [written[-1]]
    return parse_document(doc)
