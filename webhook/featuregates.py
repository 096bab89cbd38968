"""The cluster's feature gates, as its kube-apiserver's `--feature-gates` sets them.

Operators turn gates on (an alpha such as GenericWorkload) or off; the API server then drops, keeps
and judges Pod fields as those gates say, not as the release's defaults do. `--feature-gates`
(`Name=true,Other=false`, the kube-apiserver's own syntax) tells ServingGate the same, read alike by
`serve`, `check` and `audit`. A name no kube-apiserver release knows is refused when the setting is
read; one the cluster's release does not know is refused as soon as that release is known (named by
`--kubernetes-version`, or read from `/version`). The names each release accepts are recorded in
`gatenames.py` from the real servers (1.28 and 1.34 to 1.37); for a release between two recorded
ones, a name either neighbour knows is taken, and a release newer than the newest recorded is
checked against the newest.

A leaf module like kubeversion: every layer can read a gate setting.
"""

from __future__ import annotations

from .gatenames import RECORDED
from .kubeversion import KubeVersion

Gates = tuple[tuple[str, bool], ...]

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}  # Go's strconv.ParseBool, as the flag parses it
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_RELEASES = sorted((KubeVersion(*map(int, r.split("."))), frozenset(names)) for r, names in RECORDED.items())
_EVERY = frozenset().union(*(names for _, names in _RELEASES))


def parse_feature_gates(raw: str) -> Gates:
    """`Name=true,Other=false` (spaces around items allowed, a `kube:` prefix taken off) -> sorted
    (name, on) pairs; ValueError with a short reason otherwise, or for a name no release knows."""
    out: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in str(raw).split(","))):
        name, eq, value = item.partition("=")
        name = name.strip().removeprefix("kube:")
        value = value.strip()
        if not eq or not name:
            raise ValueError(f"{item!r} is not Name=true or Name=false")
        if value not in _TRUE | _FALSE:
            raise ValueError(f"{name}: {value!r} is not true or false")
        if name not in _EVERY:
            raise ValueError(f"{name} is not a feature gate of any Kubernetes release from {_RELEASES[0][0]} to {_RELEASES[-1][0]}")
        out[name] = value in _TRUE
    return tuple(sorted(out.items()))


def known_at(version: KubeVersion) -> frozenset[str]:
    """The gate names a cluster of `version` accepts (see the module docstring)."""
    below = [names for v, names in _RELEASES if v <= version]
    above = [names for v, names in _RELEASES if v >= version]
    if below and above and below[-1] is above[0]:
        return below[-1]  # a recorded release
    if not above:
        return below[-1]
    if not below:
        return above[0]
    return below[-1] | above[0]


def not_at(gates: Gates, version: KubeVersion) -> str | None:
    """Why `gates` cannot be those of a cluster of `version`, or None."""
    missing = [name for name, _ in gates if name not in known_at(version)]
    if not missing:
        return None
    return f"{', '.join(missing)}: not a feature gate of Kubernetes {version}"
