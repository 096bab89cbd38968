"""Settings of `smoke`: Kubernetes access and the Kubernetes version the webhook was given.

Like `check` and `audit`, it reads a `serve` config file (the webhook's ConfigMap) and ignores
that file's other keys, so `smoke --config` with the webhook's file reports the version the
webhook judges by (`serve`'s settings are webhook/servesettings.py, declarations only)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import KubernetesVersionSettings, KubeSettings, group
from ..servesettings import ServeSettings


@dataclass(frozen=True)
class SmokeSettings:
    """`smoke`: Kubernetes access, and the webhook's `--kubernetes-version` (to report what it judges by)."""

    kube: KubeSettings = group(KubeSettings)
    version: KubernetesVersionSettings = group(KubernetesVersionSettings)


SHARES_FILE_WITH = ServeSettings  # `config.load(..., shared_with=)`: the webhook's keys it tolerates in its file
