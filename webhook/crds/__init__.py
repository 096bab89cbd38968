"""The CRDs `check` validates against, shipped with the product (package data).

Each bundled CRD is stored as JSON without its `description` texts (they are most of the
ModelServing CRD's size and no check reads them), next to `versions.json`, which records where each came
from: the upstream project, release or commit, and the sha256 of the upstream file. Refresh them
with one command (`python -m webhook crds refresh DIR...`, see `refresh.py`); `check --crd`
reads a cluster's own CRDs instead.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import yaml

VERSIONS_FILE = "versions.json"


def _here() -> Any:
    return resources.files(__name__)


def versions() -> list[dict[str, Any]]:
    """One entry per bundled CRD: name, group, kind, versions, upstream, sha256, file."""
    entries: list[dict[str, Any]] = orjson.loads(_here().joinpath(VERSIONS_FILE).read_bytes())
    return entries


def bundled() -> list[dict[str, Any]]:
    """The bundled CustomResourceDefinitions, as dicts."""
    return [orjson.loads(_here().joinpath(entry["file"]).read_bytes()) for entry in versions()]


def is_crd(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition" and str(doc.get("apiVersion", "")).startswith("apiextensions.k8s.io/")


def crd_files(path: Path) -> list[Path]:
    """`path` itself, or every .yaml/.yml/.json below it (sorted, recursive)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json"))
    return [path]


def read_crds(path: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in a file or directory (other documents are ignored)."""
    found: list[dict[str, Any]] = []
    for file in crd_files(path):
        with open(file, "rb") as fh:
            for doc in yaml.load_all(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                if is_crd(doc):
                    found.append(doc)
    return found


def strip_descriptions(node: Any) -> Any:
    """The schema without `description` texts. A property *named* description is kept: only the
    key inside a schema object is dropped, never an entry of `properties`."""
    if isinstance(node, list):
        return [strip_descriptions(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in _DATA_KEYS:  # values, not schemas: kept as they are
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = strip_descriptions(value)
    return out


_DATA_KEYS = frozenset({"default", "enum", "example", "x-kubernetes-validations"})
