"""Settings of `check`: the policy settings and the Kubernetes version, so it gives the webhook's answer. It also reads
a `serve` config file (the webhook's ConfigMap) and ignores that file's other keys, which is why it
knows `serve`'s settings class (webhook/settings/serve.py, declarations only)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import KubernetesVersionSettings, group
from ..policies.settings import PolicySettings
from ..settings.serve import ServeSettings


@dataclass(frozen=True)
class CheckSettings:
    """`check`: the policy settings and the Kubernetes version; it also reads a `serve` config file and ignores the rest."""

    policies: PolicySettings = group(PolicySettings)
    version: KubernetesVersionSettings = group(KubernetesVersionSettings)


SHARES_FILE_WITH = ServeSettings  # `config.load(..., shared_with=)`: the keys `check` tolerates in its file
