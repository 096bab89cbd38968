"""What a rule may read besides the request: policy settings and lookups of other objects.

Lookups break the dependency of pure rules on the Kubernetes API (kopf's MemoGetter plays the
same role): the server wires a cached API client, `check` the documents given, tests plain dicts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..kubeversion import NEWEST, KubeVersion
from .settings import PolicySettings


class LookupFailed(Exception):
    """The other object could not be read (API error, timeout); distinct from "it does not exist"."""


class MustWait(BaseException):
    """A lookup would have to wait for the API server where waiting is not allowed: the server
    answers small reviews on its event loop, which must never block, and runs this one again on a
    thread. A BaseException, so that no rule's or engine's `except Exception` mistakes it for a
    crash; it is raised before the review has recorded or answered anything."""


class _WaitPolicy(threading.local):
    forbidden = False


_waits = _WaitPolicy()


@contextmanager
def waiting_forbidden() -> Iterator[None]:
    """Within this block, on this thread, a lookup that would wait raises MustWait instead."""
    _waits.forbidden = True
    try:
        yield
    finally:
        _waits.forbidden = False


def may_wait() -> bool:
    """Whether a lookup on this thread may wait for the API server (see `waiting_forbidden`)."""
    return not _waits.forbidden


class Lookups(Protocol):
    """May also have `for_review() -> Lookups`: the view one review uses (the server's lookups
    give each review its own time budget that way); without it the lookups themselves are used."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, None when it does not exist; raises LookupFailed when that cannot be told."""
        ...


class ReviewLookups:
    """One review's lookups: each object is asked for at most once, its failure included (both
    pod mutators read the same owner ModelServing), so a slow API server is waited for once per
    review and object, not once per rule."""

    __slots__ = ("_inner", "_seen")

    def __init__(self, inner: Lookups) -> None:
        self._inner = inner
        self._seen: dict[tuple[str, str, str, str], dict[str, Any] | None | str] = {}

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = (api_version, kind, namespace, name)
        if key in self._seen:
            found = self._seen[key]
            if isinstance(found, str):
                raise LookupFailed(found)
            return found
        try:
            found = self._inner.get(api_version, kind, namespace, name)
        except LookupFailed as exc:
            self._seen[key] = str(exc)
            raise
        self._seen[key] = found
        return found


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
    # the Kubernetes minor whose API server the rules mirror (resolved: never "auto")
    kubernetes_version: KubeVersion = NEWEST
    # what the cluster-fact rules read (policies/clusterfacts.ClusterFacts); None: no cluster
    facts: Any = None
    # rule name -> enforcement action, from settings.rule_actions (computed once, read per review)
    actions: Mapping[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", self.settings.actions())

    def follow_version(self, version: KubeVersion) -> None:
        """The cluster's version changed under a running server (an upgraded control plane):
        reviews that start from now on judge by `version`. The one field that changes after
        creation, by a single attribute store (atomic for the threads reading it); `for_review`
        copies it into each review's context, so one review never sees two versions."""
        object.__setattr__(self, "kubernetes_version", version)

    def for_review(self) -> Context:
        """The context one review runs with: the same settings and actions, and, when the lookups
        have a per-review view (the server's: one time budget per review), that view asking for
        each object at most once (ReviewLookups). Lookups without one (files, tests) are used as
        they are, at no cost."""
        start = getattr(self.lookups, "for_review", None)
        view = start() if start is not None else self.lookups
        if view is self.lookups:
            return self
        ctx = object.__new__(Context)  # not __init__: the actions are this context's, computed once
        object.__setattr__(ctx, "settings", self.settings)
        object.__setattr__(ctx, "lookups", ReviewLookups(view))
        object.__setattr__(ctx, "kubernetes_version", self.kubernetes_version)
        object.__setattr__(ctx, "facts", self.facts)
        object.__setattr__(ctx, "actions", self.actions)
        return ctx
