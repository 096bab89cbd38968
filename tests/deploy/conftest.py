"""Fixtures for the deployment tests: the committed webhook configurations and a small kustomize.
The fake API server (`fake_api`, `api_client`) comes from the root conftest (tests/fakes/apiserver.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import yaml_documents

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def committed_configurations() -> list[dict]:
    text = (REPO / "manifests" / "base" / "webhook-configurations.yaml").read_text()
    return yaml_documents(text)


# ---- a small kustomize, for the features our kustomizations use ---------------------------------
#
# `resources` (files and directories), `patches` with an inline JSON 6902 patch and a `target`
# (kind, name), and inline strategic-merge patches whose only job is `$patch: delete`. Anything
# else in a kustomization.yaml is refused, so a new feature cannot slip past the tests. When
# kubectl is installed, a test checks that this renders the same objects as `kubectl kustomize`.

import jsonpatch  # noqa: E402

SUPPORTED_KUSTOMIZATION_KEYS = {"apiVersion", "kind", "resources", "patches"}


def _key(doc: dict) -> tuple[str, str, str, str]:
    meta = doc.get("metadata") or {}
    return (doc.get("apiVersion", ""), doc.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))


def kustomize(directory: Path) -> list[dict]:
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(spec) - SUPPORTED_KUSTOMIZATION_KEYS
    if unknown:
        raise ValueError(f"{directory}/kustomization.yaml uses {sorted(unknown)}, which the test renderer does not support")
    docs: list[dict] = []
    for entry in spec.get("resources") or ():
        path = (directory / entry).resolve()
        if path.is_dir():
            docs.extend(kustomize(path))
        else:
            docs.extend(yaml_documents(path.read_text()))
    for patch in spec.get("patches") or ():
        if set(patch) - {"patch", "target"}:
            raise ValueError(f"unsupported patch fields {sorted(set(patch) - {'patch', 'target'})}")
        body = yaml.safe_load(patch["patch"])
        if isinstance(body, list):
            target = patch["target"]
            hits = [d for d in docs if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]]
            if len(hits) != 1:
                raise ValueError(f"patch target {target} matched {len(hits)} objects")
            patched = jsonpatch.apply_patch(hits[0], body)
            docs[docs.index(hits[0])] = patched
        elif isinstance(body, dict) and body.get("$patch") == "delete" and set(body) == {"$patch", "apiVersion", "kind", "metadata"}:
            key = _key(body)
            hits = [d for d in docs if _key(d) == key]
            if len(hits) != 1:
                raise ValueError(f"delete patch {key} matched {len(hits)} objects")
            docs.remove(hits[0])
        else:
            raise ValueError(f"unsupported patch: {patch['patch'][:80]}")
    keys = [_key(d) for d in docs]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise ValueError(f"duplicate objects {sorted(duplicates)}")
    return docs


MANIFESTS = REPO / "manifests"
VARIANTS = {"base": MANIFESTS, "cert-manager": MANIFESTS / "overlays" / "cert-manager"}


@pytest.fixture(params=sorted(VARIANTS))
def variant(request) -> tuple[str, list[dict]]:
    return request.param, kustomize(VARIANTS[request.param])


@pytest.fixture
def base_docs() -> list[dict]:
    return kustomize(VARIANTS["base"])


@pytest.fixture
def overlay_docs() -> list[dict]:
    return kustomize(VARIANTS["cert-manager"])


def find(docs: list[dict], kind: str, name: str) -> dict:
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, f"{kind} {name}: {len(hits)} objects"
    return hits[0]


@pytest.fixture
def find_doc():
    return find


# ---- kubectl kustomize (tests/deploy/rendering.py) ----------------------------------------------

from deploy.rendering import kubectl_kustomize, write_overlay  # noqa: E402  (tests/ is on sys.path)


@pytest.fixture
def render_overlay(tmp_path):
    """`render_overlay(resources, components=..., transformers=..., namespace=...)`: the objects
    `kubectl kustomize` renders for such a user overlay."""
    count = iter(range(1000))

    def render(resources: list[Path], **kwargs) -> list[dict]:
        return kubectl_kustomize(write_overlay(tmp_path / f"overlay-{next(count)}", resources, **kwargs))

    return render
