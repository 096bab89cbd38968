"""Reading decoded JSON values without trusting their type.

Each helper stands for a check the code base used to spell out at every read (`x if
isinstance(x, dict) else {}`): one definition, so that a reader meets one name for one idea.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a missing or malformed map reads as empty)."""
    return value if isinstance(value, dict) else {}


def as_object(value: Any) -> dict[str, Any] | None:
    """`value` when it is a JSON object, else None: for a field whose absence means something else than empty."""
    return value if isinstance(value, dict) else None


def as_list(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def objects(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """The (index, item) of each item of a JSON array that is an object; nothing for anything else.
    The index is the item's place in the array, for the field path of an error about it."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict):
                yield i, item


def only_objects(values: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The items of `values` that are JSON objects (a listed or recorded object of the wrong type is skipped)."""
    return (item for item in values if isinstance(item, dict))


def metadata(obj: Any) -> dict[str, Any]:
    """An object's `metadata`, or an empty one."""
    return as_dict(as_dict(obj).get("metadata"))


def labels_of(obj: Any) -> dict[str, Any]:
    """An object's `metadata.labels`, or an empty map."""
    return as_dict(metadata(obj).get("labels"))


def namespace_of(obj: Any) -> str:
    """An object's `metadata.namespace` when it is a string, else ""."""
    namespace = metadata(obj).get("namespace")
    return namespace if isinstance(namespace, str) else ""
