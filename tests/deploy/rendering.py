"""Rendering with kubectl's own kustomize, for what the small renderer in conftest.py does not
do: components, `transformers` and `replacements` (kubectl is part of the development and CI
machine). An overlay is written to a temporary folder and points back at the repository with
relative paths, as a user's overlay would."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml
from support import yaml_documents

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
COMPONENTS = MANIFESTS / "components"
CERT_MANAGER = MANIFESTS / "overlays" / "cert-manager"


def kubectl_kustomize(directory: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed to render the kustomize components (it comes with the machine)"
    done = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True)
    assert done.returncode == 0, f"kubectl kustomize {directory}: {done.stderr.strip()}"
    return yaml_documents(done.stdout)


def write_overlay(folder: Path, resources: list[Path], *, components: list[Path] = (), transformers: list[Path] = (), **fields) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec: dict = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **fields}
    spec["resources"] = [os.path.relpath(p, folder) for p in resources]
    if components:
        spec["components"] = [os.path.relpath(p, folder) for p in components]
    if transformers:
        spec["transformers"] = [os.path.relpath(p, folder) for p in transformers]
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder
