"""Writing graph documents as JSON: compact, one tensor or operator per line."""

from __future__ import annotations

import json
from typing import Any

from gaplanner.documents.schema import Document

_ITEM = {"separators": (", ", ": ")}


def document_data(doc: Document) -> dict[str, Any]:
    """Plain JSON data of a document, without unset or default-valued optional fields."""
    data = doc.model_dump(mode="json", exclude_none=True)
    if data.get("alignment") == 1:
        del data["alignment"]
    if not data.get("sync"):
        data.pop("sync", None)
    for op in data.get("operators", []):
        for key in ("views", "inplace"):
            if not op.get(key):
                op.pop(key, None)
    return data


def document_text(doc: Document | dict[str, Any]) -> str:
    """JSON text of a document: top-level fields first, then one list item per line."""
    data = document_data(doc) if isinstance(doc, Document) else doc
    lines = ["{"]
    entries = list(data.items())
    for k, (key, value) in enumerate(entries):
        comma = "," if k < len(entries) - 1 else ""
        if isinstance(value, list):
            items = ",\n".join("    " + json.dumps(item, **_ITEM) for item in value)
            body = f"[\n{items}\n  ]" if value else "[]"
            lines.append(f"  {json.dumps(key)}: {body}{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"
