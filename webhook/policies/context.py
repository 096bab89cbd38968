"""What a rule may read besides the request: policy settings and lookups of other objects.

Lookups break the dependency of pure rules on the Kubernetes API (kopf's MemoGetter plays the
same role): the server wires a cached API client, `check` the documents given, tests plain dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .settings import PolicySettings


class LookupFailed(Exception):
    """The other object could not be read (API error, timeout); distinct from "it does not exist"."""


class Lookups(Protocol):
    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, None when it does not exist; raises LookupFailed when that cannot be told."""
        ...


class NoLookups:
    """For a server without API access: every lookup fails, so rules fall back to their warning."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        raise LookupFailed("no Kubernetes API access configured")


class DictLookups:
    """Lookups answered from a set of objects (tests, and `check` from the documents given)."""

    def __init__(self, objects: Iterable[dict[str, Any]] = ()) -> None:
        self._objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        key = (group, str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self._objects[key] = obj

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        group = api_version.rpartition("/")[0]
        found = self._objects.get((group, kind, namespace, name))
        if found is None and not namespace:
            return None
        return found if found is not None else self._objects.get((group, kind, "", name))


@dataclass(frozen=True, slots=True)
class Context:
    settings: PolicySettings = field(default_factory=PolicySettings)
    lookups: Lookups = field(default_factory=NoLookups)
    # rule name -> enforcement action, from settings.rule_actions (computed once, read per review)
    actions: Mapping[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", self.settings.actions())
