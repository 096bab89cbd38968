"""Settings of `check`: the policy settings, the Kubernetes version and the CRD files, so it gives the webhook's and the
API server's answer. It also reads a `serve` config file (the webhook's ConfigMap) and ignores that file's other keys,
which is why it knows `serve`'s settings class (webhook/servesettings.py, declarations only)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import CrdSettings, KubernetesVersionSettings, group
from ..policies.settings import PolicySettings
from ..servesettings import ServeSettings


@dataclass(frozen=True)
class CheckSettings:
    """`check`: the policy settings, the Kubernetes version and the CRDs; it also reads a `serve` config file and ignores the rest."""

    policies: PolicySettings = group(PolicySettings)
    version: KubernetesVersionSettings = group(KubernetesVersionSettings)
    crds: CrdSettings = group(CrdSettings)


SHARES_FILE_WITH = ServeSettings  # `config.load(..., shared_with=)`: the keys `check` tolerates in its file
