"""The JSON patch a mutation answers with: the diff of the object as sent against the object as
the mutators left it.

Kept apart from the wire responses so the engine, which computes the patch, does not depend on
how a review answer is written.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
from jsonpointer import escape


def _diff(src: Any, dst: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(src, dict) and isinstance(dst, dict):
        for key, value in src.items():
            if key not in dst:
                ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
            elif value is not dst[key] and value != dst[key]:
                _diff(value, dst[key], f"{path}/{escape(key)}", ops)
        for key, value in dst.items():
            if key not in src:
                ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": value})
    elif isinstance(src, list) and isinstance(dst, list):
        # Lists rarely change in a mutation; jsonpatch finds the minimal edit within this one.
        for op in jsonpatch.make_patch(src, dst).patch:
            op["path"] = path + op["path"]
            if "from" in op:
                op["from"] = path + op["from"]
            ops.append(op)
    else:
        ops.append({"op": "replace", "path": path, "value": dst})


def make_patch(original: dict[str, Any] | None, edited: dict[str, Any] | None) -> list[dict[str, Any]]:
    """RFC 6902 operations that turn `original` into `edited`, computed by diff, never by hand.

    Equal subtrees are skipped with one C-level `==` each, so the cost follows the size of the
    change rather than of the object (jsonpatch alone walks every list of the pod; the cost is in
    benchmarks/HISTORY.md).
    """
    ops: list[dict[str, Any]] = []
    if original is None or edited is None or original == edited:
        return ops
    _diff(original, edited, "", ops)
    return ops
