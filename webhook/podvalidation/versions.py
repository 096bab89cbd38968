"""What changes in Pod validation from one Kubernetes minor to the next: the one table.

Two facts decide how a minor's API server treats a Pod field, and both live here, nowhere else:

- `GATES`: each feature gate that Pod validation or `dropDisabledFields` reads, with upstream's
  versioned defaults (`defaultVersionedKubernetesFeatureGates` in `pkg/features/kube_features.go`
  of k8s.io/kubernetes v1.34.4, v1.35.4, v1.36.3 and v1.37.2, each minor's own file; each
  server's `kube-apiserver -h` lists the same stages, tests/fixtures/featuregates). Gates removed
  after their GA (`AppArmorFields`, `PodHostIPs`; in 1.37 `SidecarContainers`,
  `PodLifecycleSleepAction[AllowZero]`, `RelaxedDNSSearchValidation`) keep their last entry: the
  behaviour stays on. A gate missing at a minor does not exist there (the drop it guards is not
  made); present, it is on or off by its default, or as the cluster's `--feature-gates` set it.
- `FIELDS`: the Pod fields added (or removed) after 1.28, as the OpenAPI schemas that
  `kubernetes-validate` ships per minor say (`podspec-v1.json` and what it references, 1.28 to
  1.37). tests/podvalidation/test_versions.py rebuilds this table from those schemas and fails when
  it drifts. A field a minor's schema lacks is one its JSON decoding drops.

`options.options_for(version)` turns a minor into the `PodOptions` every check reads. Tables and
the questions they answer only: nothing here imports the rest of the package.
"""

from __future__ import annotations

from typing import NamedTuple

from ..kubeversion import NEWEST, OLDEST, KubeVersion

# gate -> ((minor, default), ...): from that minor on, the gate exists with that default.
GATES: dict[str, tuple[tuple[int, bool], ...]] = {
    "AppArmorFields": ((30, True),),
    "AtomicWriteVolumeUserFields": ((37, False),),
    "ClusterTrustBundleProjection": ((29, False), (37, True)),
    "ContainerRestartRules": ((34, False), (35, True)),
    "ContainerStopSignals": ((33, False),),
    "DynamicResourceAllocation": ((26, False), (34, True)),
    "EmptyDirVolumeMode": ((37, False),),
    "EnvFiles": ((34, False), (35, True)),
    "EvictionRequestAPI": ((37, False),),
    "GenericWorkload": ((35, False),),
    "GRPCContainerProbeTLS": ((37, False),),
    "H2CContainerProbe": ((37, False),),
    "HostnameOverride": ((34, False), (35, True)),
    "ImageVolume": ((31, False), (35, True)),
    "InPlacePodVerticalScaling": ((27, False), (33, True)),
    "MatchLabelKeysInPodAffinity": ((29, False), (31, True)),
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": ((34, True),),
    "PodCertificateRequest": ((34, False), (37, True)),
    "PodHostIPs": ((28, False), (29, True)),
    "PodLevelResources": ((32, False), (34, True)),
    "PodLifecycleSleepAction": ((29, False), (30, True)),
    "PodLifecycleSleepActionAllowZero": ((32, False), (33, True)),
    "ProcMountType": ((12, False), (33, True)),
    "RecursiveReadOnlyMounts": ((30, False), (31, True)),
    "RelaxedDNSSearchValidation": ((32, False), (33, True)),
    "RelaxedEnvironmentVariableValidation": ((30, False), (32, True)),
    "RestartAllContainersOnContainerExits": ((35, False), (36, True)),
    "SELinuxChangePolicy": ((32, False), (33, True)),
    "SELinuxMount": ((30, False), (37, True)),
    "SidecarContainers": ((28, False), (29, True)),
    "StrictIPCIDRValidation": ((33, False), (36, True)),
    "SupplementalGroupsPolicy": ((31, False), (33, True)),
    "UserNamespacesSupport": ((25, False), (33, True)),
    "VolumeBindMountOptions": ((37, False),),
}


class Span(NamedTuple):
    """The minors whose Pod schema has a field: from `added` (None: 1.28 or before) up to, not
    including, `removed` (None: still there at the newest schema we read)."""

    added: int | None
    removed: int | None = None


# A path is relative to the PodSpec; `[]` stands for every item of a list.
FIELDS: dict[str, Span] = {
    "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.matchLabelKeys": Span(29),
    "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.mismatchLabelKeys": Span(29),
    "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].matchLabelKeys": Span(29),
    "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].mismatchLabelKeys": Span(29),
    "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.matchLabelKeys": Span(29),
    "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm.mismatchLabelKeys": Span(29),
    "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].matchLabelKeys": Span(29),
    "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].mismatchLabelKeys": Span(29),
    "containers[].env[].valueFrom.fileKeyRef": Span(34),
    "containers[].lifecycle.postStart.httpGet.protocol": Span(37),
    "containers[].lifecycle.postStart.sleep": Span(29),
    "containers[].lifecycle.preStop.httpGet.protocol": Span(37),
    "containers[].lifecycle.preStop.sleep": Span(29),
    "containers[].lifecycle.stopSignal": Span(33),
    "containers[].livenessProbe.grpc.mode": Span(37),
    "containers[].livenessProbe.httpGet.protocol": Span(37),
    "containers[].readinessProbe.grpc.mode": Span(37),
    "containers[].readinessProbe.httpGet.protocol": Span(37),
    "containers[].resources.claims[].request": Span(31),
    "containers[].restartPolicyRules": Span(34),
    "containers[].securityContext.appArmorProfile": Span(30),
    "containers[].startupProbe.grpc.mode": Span(37),
    "containers[].startupProbe.httpGet.protocol": Span(37),
    "containers[].volumeMounts[].bindMountOptions": Span(37),
    "containers[].volumeMounts[].recursiveReadOnly": Span(30),
    "ephemeralContainers[].env[].valueFrom.fileKeyRef": Span(34),
    "ephemeralContainers[].lifecycle.postStart.httpGet.protocol": Span(37),
    "ephemeralContainers[].lifecycle.postStart.sleep": Span(29),
    "ephemeralContainers[].lifecycle.preStop.httpGet.protocol": Span(37),
    "ephemeralContainers[].lifecycle.preStop.sleep": Span(29),
    "ephemeralContainers[].lifecycle.stopSignal": Span(33),
    "ephemeralContainers[].livenessProbe.grpc.mode": Span(37),
    "ephemeralContainers[].livenessProbe.httpGet.protocol": Span(37),
    "ephemeralContainers[].readinessProbe.grpc.mode": Span(37),
    "ephemeralContainers[].readinessProbe.httpGet.protocol": Span(37),
    "ephemeralContainers[].resources.claims[].request": Span(31),
    "ephemeralContainers[].restartPolicyRules": Span(34),
    "ephemeralContainers[].securityContext.appArmorProfile": Span(30),
    "ephemeralContainers[].startupProbe.grpc.mode": Span(37),
    "ephemeralContainers[].startupProbe.httpGet.protocol": Span(37),
    "ephemeralContainers[].volumeMounts[].bindMountOptions": Span(37),
    "ephemeralContainers[].volumeMounts[].recursiveReadOnly": Span(30),
    "evictionResponders": Span(37),
    "hostnameOverride": Span(34),
    "initContainers[].env[].valueFrom.fileKeyRef": Span(34),
    "initContainers[].lifecycle.postStart.httpGet.protocol": Span(37),
    "initContainers[].lifecycle.postStart.sleep": Span(29),
    "initContainers[].lifecycle.preStop.httpGet.protocol": Span(37),
    "initContainers[].lifecycle.preStop.sleep": Span(29),
    "initContainers[].lifecycle.stopSignal": Span(33),
    "initContainers[].livenessProbe.grpc.mode": Span(37),
    "initContainers[].livenessProbe.httpGet.protocol": Span(37),
    "initContainers[].readinessProbe.grpc.mode": Span(37),
    "initContainers[].readinessProbe.httpGet.protocol": Span(37),
    "initContainers[].resources.claims[].request": Span(31),
    "initContainers[].restartPolicyRules": Span(34),
    "initContainers[].securityContext.appArmorProfile": Span(30),
    "initContainers[].startupProbe.grpc.mode": Span(37),
    "initContainers[].startupProbe.httpGet.protocol": Span(37),
    "initContainers[].volumeMounts[].bindMountOptions": Span(37),
    "initContainers[].volumeMounts[].recursiveReadOnly": Span(30),
    "resourceClaims[].resourceClaimName": Span(31),
    "resourceClaims[].resourceClaimTemplateName": Span(31),
    "resourceClaims[].source": Span(None, 31),
    "resources": Span(32),
    "schedulingGroup": Span(36),
    "securityContext.appArmorProfile": Span(30),
    "securityContext.seLinuxChangePolicy": Span(32),
    "securityContext.supplementalGroupsPolicy": Span(31),
    "volumes[].configMap.defaultUser": Span(37),
    "volumes[].configMap.items[].user": Span(37),
    "volumes[].downwardAPI.defaultUser": Span(37),
    "volumes[].downwardAPI.items[].user": Span(37),
    "volumes[].emptyDir.mode": Span(37),
    "volumes[].ephemeral.volumeClaimTemplate.spec.resources.claims": Span(None, 29),
    "volumes[].ephemeral.volumeClaimTemplate.spec.volumeAttributesClassName": Span(29),
    "volumes[].image": Span(31),
    "volumes[].projected.defaultUser": Span(37),
    "volumes[].projected.sources[].clusterTrustBundle": Span(29),
    "volumes[].projected.sources[].clusterTrustBundle.user": Span(37),
    "volumes[].projected.sources[].configMap.items[].user": Span(37),
    "volumes[].projected.sources[].downwardAPI.items[].user": Span(37),
    "volumes[].projected.sources[].podCertificate": Span(34),
    "volumes[].projected.sources[].podCertificate.user": Span(37),
    "volumes[].projected.sources[].podCertificate.userAnnotations": Span(35),
    "volumes[].projected.sources[].secret.items[].user": Span(37),
    "volumes[].projected.sources[].serviceAccountToken.user": Span(37),
    "volumes[].secret.defaultUser": Span(37),
    "volumes[].secret.items[].user": Span(37),
    "workloadRef": Span(35, 36),
}

# The minors whose Pod validation is ported: OLDEST to NEWEST.
PORTED = tuple(KubeVersion(1, minor) for minor in range(OLDEST.minor, NEWEST.minor + 1))


def gate_default(gate: str, version: KubeVersion) -> bool | None:
    """The gate's default at `version`; None when the gate does not exist there yet."""
    default = None
    for minor, on in GATES[gate]:
        if version.minor >= minor:
            default = on
    return default


def since(change: str, version: KubeVersion) -> bool:
    """Whether `version`'s Pod validation has the ungated `change` (a key of `SINCE`)."""
    return version.minor >= SINCE[change]


def has_field(path: str, version: KubeVersion) -> bool:
    """Whether `version`'s Pod schema has the field at `path` (a path of `FIELDS`)."""
    added, removed = FIELDS[path]
    return (added is None or version.minor >= added) and (removed is None or version.minor < removed)


def _every_container(*paths: str) -> tuple[str, ...]:
    return tuple(f"{kind}[].{p}" for kind in ("containers", "initContainers", "ephemeralContainers") for p in paths)


_AFFINITY_TERMS = tuple(
    f"affinity.{kind}.{term}.{key}"
    for kind in ("podAffinity", "podAntiAffinity")
    for term in ("requiredDuringSchedulingIgnoredDuringExecution[]", "preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm")
    for key in ("matchLabelKeys", "mismatchLabelKeys")
)

# gate -> the fields the API server drops on create while the gate is off (`dropDisabledFields`
# and the drop* functions it calls, pkg/api/pod/util.go). A few drops do more than remove the
# field, as upstream does (drops.py): `sleep` takes its hook along when no other handler is left,
# `stopSignal` an emptied `lifecycle`; ContainerRestartRules keeps an init container's
# `restartPolicy: Always`; ImageVolume removes the volume and the mounts that name it.
GATED_FIELDS: dict[str, tuple[str, ...]] = {
    "AppArmorFields": ("securityContext.appArmorProfile",) + _every_container("securityContext.appArmorProfile"),
    "UserNamespacesSupport": ("hostUsers",),
    "SupplementalGroupsPolicy": ("securityContext.supplementalGroupsPolicy",),
    "PodLevelResources": ("resources",),
    "ProcMountType": _every_container("securityContext.procMount"),
    "MatchLabelKeysInPodAffinity": _AFFINITY_TERMS,
    "DynamicResourceAllocation": ("resourceClaims",) + _every_container("resources.claims"),
    "ClusterTrustBundleProjection": ("volumes[].projected.sources[].clusterTrustBundle",),
    "PodCertificateRequest": ("volumes[].projected.sources[].podCertificate",),
    "InPlacePodVerticalScaling": _every_container("resizePolicy"),
    "SidecarContainers": ("initContainers[].restartPolicy",),
    "ContainerRestartRules": _every_container("restartPolicy", "restartPolicyRules"),
    "RecursiveReadOnlyMounts": _every_container("volumeMounts[].recursiveReadOnly"),
    "HostnameOverride": ("hostnameOverride",),
    "EnvFiles": _every_container("env[].valueFrom.fileKeyRef"),
    "PodLifecycleSleepAction": _every_container("lifecycle.preStop.sleep", "lifecycle.postStart.sleep"),
    "ImageVolume": ("volumes[].image",),
    "SELinuxChangePolicy": ("securityContext.seLinuxChangePolicy",),
    "ContainerStopSignals": _every_container("lifecycle.stopSignal"),
    # 1.35 to 1.37 (dropDisabledWorkloadRef, dropDisabledSchedulingGroup, ... of util.go, v1.37.2)
    "GenericWorkload": ("workloadRef", "schedulingGroup"),
    "EvictionRequestAPI": ("evictionResponders",),
    "EmptyDirVolumeMode": ("volumes[].emptyDir.mode",),
    "VolumeBindMountOptions": _every_container("volumeMounts[].bindMountOptions"),
    "H2CContainerProbe": _every_container(
        "livenessProbe.httpGet.protocol",
        "readinessProbe.httpGet.protocol",
        "startupProbe.httpGet.protocol",
        "lifecycle.postStart.httpGet.protocol",
        "lifecycle.preStop.httpGet.protocol",
    ),
    "GRPCContainerProbeTLS": _every_container("livenessProbe.grpc.mode", "readinessProbe.grpc.mode", "startupProbe.grpc.mode"),
    "AtomicWriteVolumeUserFields": tuple(
        sorted(p for p, span in FIELDS.items() if span.added == 37 and p.startswith("volumes[]") and p.rsplit(".", 1)[-1] in ("user", "defaultUser"))
    ),
}

# gate -> the upstream checks (pkg/apis/core/validation/validation.go) ported for the fields or
# behaviour it guards, judged wherever the gate is on. A gate of GATED_FIELDS missing here has its
# fields dropped while it is off, and kept but not yet judged once it is on.
CHECKS: dict[str, str] = {
    "SidecarContainers": "validateInitContainers (a sidecar's hooks and probes), validateInitContainerRestartPolicy",
    "PodLifecycleSleepAction": "validateHandler and validateSleepAction (`sleep` hooks)",
    "PodLifecycleSleepActionAllowZero": "validateSleepAction: a zero sleep allowed",
    "PodHostIPs": "validateEnvVarValueFrom: `status.hostIPs` allowed",
    "AppArmorFields": "ValidateAppArmorProfileField (pod and containers), validateAppArmorAnnotationsAndFieldsMatchOnCreate",
    "SupplementalGroupsPolicy": "validateSupplementalGroupsPolicy",
    "SELinuxChangePolicy": "validateSELinuxChangePolicy",
    "SELinuxMount": "validateSELinuxChangePolicy: values other than Recursive",
    "RecursiveReadOnlyMounts": "ValidateVolumeMounts: `recursiveReadOnly`",
    "ImageVolume": "validateImageVolumeSource, ValidateVolumeMounts: no subPath into an image volume",
    "MatchLabelKeysInPodAffinity": "validatePodAffinityTerm: `matchLabelKeys`, `mismatchLabelKeys`",
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": "validateTopologySpreadConstraints: `matchLabelKeys` as merged into the selector",
    "DynamicResourceAllocation": "validatePodResourceClaims, validateResourceClaimNames (container `resources.claims`)",
    "PodLevelResources": "validatePodResourceRequirements, validatePodResourceConsistency",
    "HostnameOverride": "validatePodHostName (`hostnameOverride`)",
    "GenericWorkload": "validateWorkloadReference (1.35), validateSchedulingGroup (1.36, 1.37)",
    "EnvFiles": "validateEnvVarValueFrom and validateFileKeySelector (`fileKeyRef`), validateFileKeyRefVolumes",
    "RelaxedEnvironmentVariableValidation": "ValidateEnv, ValidateEnvFrom: any printable ASCII name but '='",
    "RelaxedDNSSearchValidation": "validatePodDNSConfig: searches may hold '_', and '.' alone",
    "StrictIPCIDRValidation": "IsValidIPForLegacyField, strict: no leading 0s, no IPv4-mapped IPv6 (nameservers, hostAliases)",
    "ContainerRestartRules": "validateContainers, validateInitContainerRestartPolicy, validateContainerRestartPolicy (container `restartPolicy`, `restartPolicyRules`), validateFieldAllowList (ephemeral containers)",
    "RestartAllContainersOnContainerExits": "validateInitContainerRestartPolicy (a sidecar's rules), validateContainerRestartPolicy (action `RestartAllContainers`)",
    "InPlacePodVerticalScaling": "validateResizePolicy, validateInitContainers (`RestartContainer` in a non-sidecar init container's resizePolicy, 1.36)",
    "ClusterTrustBundleProjection": "validateProjectionSources (v1.37.2): `clusterTrustBundle` sources",
    "PodCertificateRequest": "validateProjectionSources (v1.37.2): `podCertificate` sources, ValidateUserAnnotations",
}

# Changes of Pod validation no gate guards: change -> the first minor that has it (each minor's
# pkg/apis/core/validation/validation.go, k8s.io/kubernetes v1.29.15 to v1.37.2; 1.28.7 before).
SINCE: dict[str, int] = {
    # validateProjectionSources: a serviceAccountToken's `path` is also ValidateLocalNonReservedPath
    # (AllowNonLocalProjectedTokenPath is false on create); 1.28 and 1.29 only require it.
    "ProjectedTokenLocalPath": 30,
    # validateProjectionSources: two kinds in one source are "may not specify more than 1 volume type
    # per source" (v1.31.14 on); 1.28 to 1.30 end at "volume type", as a volume's two sources still do.
    "ProjectionPerSourceMessage": 31,
}


def status_at(gate: str, version: KubeVersion) -> str:
    """What `version`'s API server does with what `gate` guards, as we mirror it: `unknown` (its
    schema lacks the fields: decoding drops them), `dropped` (the gate is off), `judged` (on, and
    its checks are ported), `kept` (on, its fields kept but not judged yet), `-` (no gate yet,
    the fields or behaviour are the older minor's)."""
    fields = [p for p in GATED_FIELDS.get(gate, ()) if p in FIELDS]
    if fields and not any(has_field(p, version) for p in fields):
        return "unknown"
    default = gate_default(gate, version)
    if default is None:
        return "-"
    if not default:
        return "dropped" if gate in GATED_FIELDS else "off"
    return "judged" if gate in CHECKS else "kept"
