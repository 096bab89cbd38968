"""Kubernetes minor versions: the one value that decides which API server we mirror.

A judgement (a review, a `check`, an audit) is made as one Kubernetes minor's API server would
make it: its Pod validation and defaults, its feature gates at their defaults, the built-in schemas
`check` reads. `KubeVersion` is that minor; `parse_kubernetes_version` reads the setting's value
(`auto` or `X.Y`), and `from_version_info` reads what the API server's `/version` answers.

A leaf module: it imports nothing of ours, so every layer can name a version.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol


class KubeVersion(NamedTuple):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


# The oldest minor we judge by: the one the recorded corpus comes from (kube-apiserver 1.28.7).
OLDEST = KubeVersion(1, 28)
# The newest minor whose Pod validation is ported (webhook/podvalidation/versions.py raises it as
# the port follows upstream). A newer cluster is judged as this one, leniently, with a warning.
NEWEST = KubeVersion(1, 37)
# The newest minor whose built-in OpenAPI schemas `check` can read (kubernetes-validate).
NEWEST_SCHEMAS = KubeVersion(1, 37)

AUTO = "auto"

_VERSION = re.compile(r"^v?(\d{1,3})\.(\d{1,3})(?:\.\d{1,6})?(?:[-+][0-9A-Za-z.+-]{0,64})?$")


def parse_minor(raw: str) -> KubeVersion:
    """`1.34`, `v1.34`, `1.34.2` or `v1.34.2-eks-1`: the minor; ValueError with a short reason otherwise."""
    match = _VERSION.match(str(raw).strip())
    if match is None:
        raise ValueError("must be auto or a Kubernetes version such as 1.34")
    version = KubeVersion(int(match.group(1)), int(match.group(2)))
    if version < OLDEST:
        raise ValueError(f"must be {OLDEST} or newer (got {version})")
    return version


def parse_kubernetes_version(raw: str) -> KubeVersion | str:
    """The setting's parser: `auto`, or a version at least OLDEST."""
    text = str(raw).strip()
    if text.lower() == AUTO:
        return AUTO
    return parse_minor(text)


def from_version_info(info: Any) -> KubeVersion:
    """The minor from a `/version` answer (a dict, or the client's VersionInfo): `gitVersion`
    first (`v1.30.4-gke.100`), then `major`/`minor` (`"1"`, `"30+"`). ValueError when neither reads."""
    if not isinstance(info, dict):
        info = {key: getattr(info, attr, None) for key, attr in (("gitVersion", "git_version"), ("major", "major"), ("minor", "minor"))}
    git = info.get("gitVersion")
    if isinstance(git, str):
        try:
            return parse_minor(git)
        except ValueError:
            pass
    major, minor = (re.match(r"^\d+", str(info.get(key) or "")) for key in ("major", "minor"))
    if major is None or minor is None:
        raise ValueError(f"no Kubernetes version in {info!r:.200}")
    return KubeVersion(int(major.group()), int(minor.group()))


def judged_as(version: KubeVersion) -> KubeVersion:
    """The minor whose rules judge a cluster of `version`: itself, or NEWEST for a newer cluster."""
    return min(max(version, OLDEST), NEWEST)


@dataclass(frozen=True)
class Chosen:
    """The version a command judges by and where it came from, for its start log line, `/readyz`
    and `check`'s notes. `version` is the cluster's minor (or the one named), which may lie
    outside OLDEST..NEWEST; `judged` is the minor whose rules apply to it."""

    version: KubeVersion
    source: str  # "--kubernetes-version", "the API server's /version (v1.30.4-gke.100)", ...
    lenient: bool = False  # True: /version could not be read and the newest supported was taken

    @property
    def judged(self) -> KubeVersion:
        return judged_as(self.version)

    def describe(self) -> str:
        """`Kubernetes 1.36, judged as 1.34, from the API server's /version (v1.36.1)`."""
        text = f"Kubernetes {self.version}"
        if self.judged != self.version:
            text += f", judged as {self.judged}"
        return f"{text}, from {self.source}"

    def log_fields(self) -> dict[str, Any]:
        return {"kubernetesVersion": str(self.version), "judgedAs": str(self.judged), "source": self.source}


def named(setting: KubeVersion | str) -> Chosen | None:
    """The choice a setting makes by itself: a version named, or None for `auto` (to be resolved)."""
    return Chosen(setting, "--kubernetes-version") if isinstance(setting, KubeVersion) else None


def from_answer(info: Any) -> Chosen:
    """The choice an API server's `/version` answer makes; ValueError when it holds no version."""
    version = from_version_info(info)
    git = info.get("gitVersion") if isinstance(info, dict) else getattr(info, "git_version", None)
    return Chosen(version, f"the API server's /version ({git or version})")


def newest_instead(reason: str) -> Chosen:
    """The lenient choice when `/version` cannot be read: the newest supported version, which
    knows the most fields and so refuses the least."""
    return Chosen(NEWEST, f"the newest supported version, as the API server's /version could not be read: {reason}", lenient=True)


class Followed(Protocol):
    """The version a long-running command judges by (kube/serverversion.FollowedVersion): the
    `current` choice, `listeners` told of a new one (an upgraded control plane), and `refresh`,
    which reads it again (the server calls it when its lookups' watch reconnects)."""

    current: Chosen
    listeners: list[Callable[[Chosen], None]]

    def refresh(self) -> None: ...
