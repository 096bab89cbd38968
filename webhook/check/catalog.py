"""Which kinds `check` knows the schema of: the bundled CRDs (or the user's `--crd` ones, which
replace a bundled CRD of the same name) and the built-in kinds of one Kubernetes version.

A kind is looked up as kubectl's RESTMapper would: a group served by a known CRD but asked for
in a version (or a kind) the CRDs do not serve is `no matches for kind`; so is a built-in group
asked for in a version that Kubernetes release does not serve (autoscaling/v2beta2 in 1.28).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import crds
from .structural import Schema, compile_schema


@dataclass(slots=True)
class CrdVersion:
    group: str
    kind: str
    version: str
    plural: str
    namespaced: bool
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

    def add(self, crd: dict[str, Any], origin: str) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind = str(spec.get("group") or ""), str(names.get("kind") or "")
        name = str((crd.get("metadata") or {}).get("name") or f"{names.get('plural')}.{group}")
        # A CRD given again (a --crd of a bundled one) replaces every version it had.
        for key in [k for k in self.versions if k[0] == group and k[1] == kind]:
            del self.versions[key]
        served: list[str] = []
        for v in spec.get("versions") or []:
            if not v.get("served", True):
                continue
            schema = ((v.get("schema") or {}).get("openAPIV3Schema")) or ((spec.get("validation") or {}).get("openAPIV3Schema")) or {}
            scale = ((v.get("subresources") or spec.get("subresources") or {}).get("scale")) or {}
            self.versions[(group, kind, v["name"])] = CrdVersion(
                group,
                kind,
                v["name"],
                str(names.get("plural") or ""),
                spec.get("scope", "Namespaced") == "Namespaced",
                schema,
                str(scale.get("specReplicasPath") or ""),
                origin,
            )
            served.append(v["name"])
        self.kinds[(group, kind)] = served
        self.groups.add(group)
        self.origins[name] = origin

    def lookup(self, group: str, kind: str, version: str) -> CrdVersion | None:
        return self.versions.get((group, kind, version))

    def serves_group(self, group: str) -> bool:
        return group in self.groups


def build(crd_paths: list[str]) -> Catalog:
    """The bundled CRDs, then each `--crd` file or directory over them."""
    catalog = Catalog()
    for entry, crd in zip(crds.versions(), crds.bundled()):
        catalog.add(crd, f"bundled ({entry['upstream']})")
    for raw in crd_paths:
        try:
            found = crds.read_crds(Path(raw))
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"--crd {raw}: cannot read: {getattr(exc, 'strerror', None) or ' '.join(str(exc).split())}") from None
        if not found:
            raise ValueError(f"--crd {raw}: no CustomResourceDefinition found")
        for crd in found:
            catalog.add(crd, raw)
    return catalog
