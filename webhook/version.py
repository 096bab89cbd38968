"""`python -m webhook version` (and `--version`): the product version, the Kubernetes versions it
judges by, and the CRDs `check` ships."""

from __future__ import annotations

from . import __version__, crds
from .kubeversion import NEWEST, NEWEST_SCHEMAS, OLDEST


def kubernetes_lines() -> list[str]:
    """The Kubernetes versions a judgement can be made at (`--kubernetes-version`)."""
    return [
        f"Kubernetes versions judged by (--kubernetes-version, default auto): {OLDEST} to {NEWEST}; a newer cluster is judged as {NEWEST}",
        f"  auto: serve, audit and smoke read the API server's /version (the newest supported when it cannot be read); check takes {NEWEST}",
        f"  check's built-in schemas (kubernetes-validate): {OLDEST} to {NEWEST_SCHEMAS}",
    ]


def lines() -> list[str]:
    out = [f"servinggate {__version__}", *kubernetes_lines(), "bundled CRDs (python -m webhook crds refresh DIR to update):"]
    for e in crds.versions():
        out.append(f"  {e['name']} {','.join(e['versions'])}: {e['upstream']} ({e['source']}, sha256 {e['sha256'][:12]})")
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python -m webhook version\n\nPrint the product version, the Kubernetes versions it judges by and the versions of the bundled CRDs.")
        return 0
    print("\n".join(lines()))
    return 0
