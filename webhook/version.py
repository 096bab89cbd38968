"""`python -m webhook version` (and `--version`): the product version, the Kubernetes versions it
judges by, and the CRDs `check` validates against (the cache's and SERVINGGATE_CRDS's; none ship
with the product)."""

from __future__ import annotations

import os

from . import __version__, config
from .crds import describe_sources
from .kubeversion import NEWEST, NEWEST_SCHEMAS, OLDEST


def kubernetes_lines() -> list[str]:
    """The Kubernetes versions a judgement can be made at (`--kubernetes-version`)."""
    return [
        f"Kubernetes versions judged by (--kubernetes-version, default auto): {OLDEST} to {NEWEST}; a newer cluster is judged as {NEWEST}",
        f"  auto: serve, audit and smoke read the API server's /version (the newest supported when it cannot be read); check takes {NEWEST}",
        f"  check's built-in schemas (kubernetes-validate): {OLDEST} to {NEWEST_SCHEMAS}",
    ]


def crd_lines() -> list[str]:
    """The CRDs `check` would use: the cache's, then SERVINGGATE_CRDS's (a config file's `crds`
    key is read by `check` itself, which knows the rest of that file)."""
    environ = {k: v for k, v in os.environ.items() if k != config.ENV_PREFIX + "CONFIG"}
    try:
        paths = list(config.load(config.CrdSettings, {}, environ).crds)
    except config.ConfigError as exc:
        return [f"CRDs: {exc}"]
    return describe_sources(paths)


def lines() -> list[str]:
    return [f"servinggate {__version__}", *kubernetes_lines(), *crd_lines()]


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python -m webhook version\n\nPrint the product version, the Kubernetes versions it judges by and the CRDs check validates against.")
        return 0
    print("\n".join(lines()))
    return 0
