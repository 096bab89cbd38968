"""One audit run: fill the projections the rules look up, then judge every audited kind page by
page. Pure orchestration: the pages come from a `Source` (listing.py reads the API server,
tests hand lists), so memory is the projections plus one page plus the findings.

ModelServings and AutoscalingPolicies are listed twice: once into the ProjectionStore (the
webhook's own lookups, policies/store.py: one implementation), once to be judged. Judging them
while filling the store would save a list but make a rule that looks up another kind depend on
the order the kinds are listed in.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..kubeversion import NEWEST, KubeVersion
from ..policies import Context, LookupFailed, Lookups, PolicySettings
from ..policies.clusterfacts import ClusterFacts
from ..policies.store import ProjectionStore
from .judging import Judged, judge
from .kinds import AuditedKind, audited_kinds


class KindMissing(Exception):
    """The API server does not serve the kind (its CRD is not installed): skipped with a note."""


class Source(Protocol):
    def pages(self, group: str, version: str, plural: str) -> Iterator[list[dict]]:
        """The objects of one resource (in the audited namespace or all), one page at a time;
        raises KindMissing when the resource is not served."""
        ...


@dataclass(slots=True)
class AuditRun:
    """What one run found: the objects with findings, how many of each kind were judged, the
    kinds skipped (not installed), and how long it took."""

    judged: list[Judged] = field(default_factory=list)
    objects: Counter[str] = field(default_factory=Counter)  # resource -> objects judged
    skipped: list[str] = field(default_factory=list)  # notes: kinds not installed
    seconds: float = 0.0
    kubernetes_version: KubeVersion = NEWEST  # the API server's version the objects were judged as

    @property
    def failed(self) -> bool:
        """A deny-action finding exists: `audit` exits 1."""
        return any(not j.allowed for j in self.judged)

    def counts(self) -> Counter[tuple[str, str]]:
        """(rule, action) -> findings, for the metrics."""
        return Counter((f.rule, f.action) for j in self.judged for f in j.findings)


def _items(pages: Iterable[list[dict]]) -> Iterator[dict]:
    for page in pages:
        yield from page


def fill(store: ProjectionStore, source: Source) -> None:
    """Every kept kind into the store; a kind not installed is marked missing (no object of it
    can exist), so a rule reading it gets "not found" or skips its check, as the webhook's would."""
    for entry in store.kinds:
        try:
            store.replace(entry, _items(source.pages(entry.group, entry.version, entry.plural)))
        except KindMissing:
            store.mark_missing(entry)


class _InNamespace(Lookups):
    """The store's lookups when one namespace is audited: only that namespace was listed, so an
    object of another one is unknown (the rule warns it could not check), not absent."""

    def __init__(self, store: ProjectionStore, namespace: str) -> None:
        self._store, self._namespace = store, namespace

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        if namespace != self._namespace:
            raise LookupFailed(f"only namespace {self._namespace} is audited")
        return self._store.get(api_version, kind, namespace, name)


def audit(
    source: Source,
    settings: PolicySettings,
    kinds: Iterable[AuditedKind] | None = None,
    *,
    namespace: str = "",
    kubernetes_version: KubeVersion = NEWEST,
    feature_gates: tuple[tuple[str, bool], ...] = (),
    clock: Callable[[], float] = time.monotonic,
) -> AuditRun:
    """Judge every object `source` lists (of `namespace` only, when given: the source lists that
    namespace alone) with `settings`' rule actions, as the API server of `kubernetes_version` would."""
    start = clock()
    run = AuditRun(kubernetes_version=kubernetes_version)
    store = ProjectionStore()
    fill(store, source)
    ctx = Context(
        settings=settings,
        lookups=_InNamespace(store, namespace) if namespace else store,
        kubernetes_version=kubernetes_version,
        feature_gates=feature_gates,
        facts=ClusterFacts(store),
    )
    for kind in audited_kinds() if kinds is None else kinds:
        try:
            for page in source.pages(kind.group, kind.version, kind.resource):
                for obj in page:
                    run.objects[kind.resource] += 1
                    found = judge(obj, kind, ctx)
                    if found is not None:
                        run.judged.append(found)
        except KindMissing:
            run.skipped.append(f"{kind.resource}.{kind.group}/{kind.version}: not served by the API server (CRD not installed); skipped")
    run.seconds = clock() - start
    return run
