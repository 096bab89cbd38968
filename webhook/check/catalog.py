"""Which kinds `check` knows the schema of: the CRDs it is given (the cluster's or the cache's, then
each `--crds` file or folder over them) and the built-in kinds of one Kubernetes version.

A kind is looked up as kubectl's RESTMapper would: a group served by a known CRD but asked for
in a version (or a kind) the CRDs do not serve is `no matches for kind`; so is a built-in group
asked for in a version that Kubernetes release does not serve (autoscaling/v2beta2 in 1.28).
A CRD given again for the same kind replaces every version it had (the last given wins), and
the catalog keeps a line saying which replaced which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import crds
from .structural import Schema, compile_schema


@dataclass(slots=True)
class CrdVersion:
    group: str
    kind: str
    version: str
    plural: str
    raw_schema: dict[str, Any]
    scale_replicas_path: str = ""  # subresources.scale.specReplicasPath, e.g. ".spec.replicas"
    origin: str = ""
    _compiled: Schema | None = field(default=None, repr=False)

    @property
    def schema(self) -> Schema:
        if self._compiled is None:
            self._compiled = compile_schema(self.raw_schema)
        return self._compiled


@dataclass(slots=True)
class Catalog:
    versions: dict[tuple[str, str, str], CrdVersion] = field(default_factory=dict)  # (group, kind, version)
    kinds: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (group, kind) -> served versions
    groups: set[str] = field(default_factory=set)
    origins: dict[str, str] = field(default_factory=dict)  # CRD name -> where it came from
    sources: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, kind) -> where its CRD came from
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, kind) -> CRD name
    replaced: list[str] = field(default_factory=list)  # one line per CRD given again for a kind
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: why", CRD documents that could not be read

    def add(self, crd: dict[str, Any], origin: str) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind = str(spec.get("group") or ""), str(names.get("kind") or "")
        name = str((crd.get("metadata") or {}).get("name") or f"{names.get('plural')}.{group}")
        earlier = self.sources.get((group, kind))
        if earlier is not None:
            self.replaced.append(f"the CRD of {kind}.{group} from {origin} replaces the one from {earlier} (the last given wins)")
            self.origins.pop(self.names.pop((group, kind), ""), None)
        for key in [k for k in self.versions if k[0] == group and k[1] == kind]:
            del self.versions[key]
        served: list[str] = []
        for v in spec.get("versions") or []:
            if not v.get("served", True):
                continue
            schema = ((v.get("schema") or {}).get("openAPIV3Schema")) or ((spec.get("validation") or {}).get("openAPIV3Schema")) or {}
            scale = ((v.get("subresources") or spec.get("subresources") or {}).get("scale")) or {}
            self.versions[(group, kind, v["name"])] = CrdVersion(
                group, kind, v["name"], str(names.get("plural") or ""), schema, str(scale.get("specReplicasPath") or ""), origin
            )
            served.append(v["name"])
        self.kinds[(group, kind)] = served
        self.groups.add(group)
        self.origins[name] = origin
        self.sources[(group, kind)] = origin
        self.names[(group, kind)] = name

    def lookup(self, group: str, kind: str, version: str) -> CrdVersion | None:
        return self.versions.get((group, kind, version))

    def serves_group(self, group: str) -> bool:
        return group in self.groups


class CrdPathError(ValueError):
    """A `--crds` path that cannot be used: missing, or holding no CRD (one line; check exits 2)."""


def build(crd_paths: list[str], base: list[tuple[dict[str, Any], str]] | None = None) -> Catalog:
    """`base` (the cluster's or the cache's CRDs, with where each came from), then each `--crds`
    file or folder over them, in the order given. Raises CrdPathError for a path that cannot be
    used; a CRD document that cannot be read is kept in `problems` and the others are read."""
    catalog = Catalog()
    for crd, origin in base or []:
        catalog.add(crd, origin)
    for raw in crd_paths:
        path = Path(raw)
        problem = crds.unusable(path)
        if problem:
            raise CrdPathError(f"--crds {raw}: {problem}")
        found = crds.scan([path])
        catalog.problems += found.problems
        if not found.crds:
            detail = "; ".join(found.problems) or found.summary().removeprefix("read 0 CRD(s); ")
            raise CrdPathError(f"--crds {raw}: no CustomResourceDefinition found ({detail})")
        for f in found.crds:
            catalog.add(f.crd, f"{f.file}:{f.line}" if f.line > 1 else str(f.file))
    return catalog
