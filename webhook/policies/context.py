"""What a rule may read besides the request: policy settings and lookups of other objects.

Lookups break the dependency of pure rules on the Kubernetes API (kopf's MemoGetter plays the
same role): the server wires a cached API client, `check` the documents given, tests plain dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..kubeversion import NEWEST, KubeVersion
from .settings import PolicySettings


class LookupFailed(Exception):
    """The other object could not be read (API error, timeout); distinct from "it does not exist"."""


class NotHere:
    """The type of NOT_HERE."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_HERE"


NOT_HERE = NotHere()  # what `try_get` answers when only waiting for the API server could tell


class Lookups(Protocol):
    """How a rule reads another object. Lookups that never wait for the API server (documents,
    a store, tests) subclass this class for the defaults of the rest: no per-review view, `try_get`
    answers as `get`, nothing to describe. The server's lookups (kube/lookups.py) replace them."""

    __slots__ = ()  # a subclass with slots keeps them (ReviewLookups: one per review)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, None when it does not exist; raises LookupFailed when that cannot be told."""
        ...

    def try_get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None | NotHere:
        """As `get`, but NOT_HERE where `get` would wait for the API server (a miss in a watch-fed
        store); asked for a review whose Context says it may not wait."""
        return self.get(api_version, kind, namespace, name)

    def for_review(self) -> Lookups | None:
        """The view one review uses (the server's lookups give each review its own time budget
        that way), or None: these lookups are used as they are (Context.for_review)."""
        return None

    def describe(self) -> str:
        """The lookups' state for /readyz; "" when they have none to tell."""
        return ""


class ReviewLookups(Lookups):
    """One review's lookups: each object is asked for at most once, its failure included (both
    pod mutators read the same owner ModelServing), so a slow API server is waited for once per
    review and object, not once per rule.

    A review that may not wait (`Context.may_wait`) asks `try_get`; an object that is not there
    without waiting fails the lookup and sets `deferred`: the engine stops the review, whose
    caller runs it again where it may wait (the server: on a thread instead of its event loop)."""

    __slots__ = ("_inner", "_seen", "_may_wait", "deferred")

    def __init__(self, inner: Lookups, may_wait: bool = True) -> None:
        self._inner = inner
        self._seen: dict[tuple[str, str, str, str], dict[str, Any] | None | str] = {}
        self._may_wait = may_wait
        self.deferred = False

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = (api_version, kind, namespace, name)
        if key in self._seen:
            found = self._seen[key]
            if isinstance(found, str):
                raise LookupFailed(found)
            return found
        try:
            if self._may_wait:
                found = self._inner.get(api_version, kind, namespace, name)
            else:
                found = self._without_waiting(api_version, kind, namespace, name)
        except LookupFailed as exc:
            self._seen[key] = str(exc)
            raise
        self._seen[key] = found
        return found

    def _without_waiting(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self._inner.try_get(api_version, kind, namespace, name)
        if isinstance(found, NotHere):
            self.deferred = True
            raise LookupFailed(f"{kind} {namespace}/{name} is not in the store and this review may not wait for the API server")
        return found


class NoLookups(Lookups):
    """For a server without API access: every lookup fails, so rules fall back to their warning."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        raise LookupFailed("no Kubernetes API access configured")


class DictLookups(Lookups):
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
    # the cluster's own --feature-gates (name, on), over the release's defaults
    feature_gates: tuple[tuple[str, bool], ...] = ()
    # what the cluster-fact rules read (policies/clusterfacts.ClusterFacts); None: no cluster
    facts: Any = None
    # one review's: whether a lookup may wait for the API server (for_review's argument); False:
    # one that would defers the review (ReviewLookups)
    may_wait: bool = True
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

    def for_review(self, may_wait: bool = True) -> Context:
        """The context one review runs with: the same settings and actions, and, when the lookups
        have a per-review view (the server's: one time budget per review), that view asking for
        each object at most once (ReviewLookups). Lookups without one (files, tests) are used as
        they are, at no cost (they never wait). `may_wait` False: a lookup that would wait for the
        API server defers the review instead (ReviewLookups)."""
        view = self.lookups.for_review()
        if view is None:
            return self
        ctx = object.__new__(Context)  # not __init__: the actions are this context's, computed once
        object.__setattr__(ctx, "settings", self.settings)
        object.__setattr__(ctx, "lookups", ReviewLookups(view, may_wait))
        object.__setattr__(ctx, "kubernetes_version", self.kubernetes_version)
        object.__setattr__(ctx, "feature_gates", self.feature_gates)
        object.__setattr__(ctx, "facts", self.facts)
        object.__setattr__(ctx, "may_wait", may_wait)
        object.__setattr__(ctx, "actions", self.actions)
        return ctx

    @property
    def deferred(self) -> bool:
        """A lookup of this review would have waited where it may not: its verdict is no answer."""
        return isinstance(self.lookups, ReviewLookups) and self.lookups.deferred
