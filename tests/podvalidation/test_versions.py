"""Pod validation by Kubernetes minor: the table (versions.py), the drops (drops.py) and the checks
that differ between 1.28 and 1.34, replayed at the minors where the behaviour differs.

The cases come from upstream's own tests of kubernetes/kubernetes (each names the Go test it is
taken from): pkg/apis/core/validation/validation_test.go and pkg/api/pod/util_test.go. No API
server newer than 1.28 runs here, so these are the evidence for 1.29 to 1.34.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from support.minors import judge, pod

from webhook.admission.fields import FieldPath
from webhook.kubeversion import NEWEST, OLDEST, KubeVersion
from webhook.podvalidation.defaults import prepare_spec
from webhook.podvalidation.options import DEFAULT_OPTIONS, options_for
from webhook.podvalidation.podspec import pod_spec_errors
from webhook.podvalidation.versions import FIELDS, GATES, PORTED, Span, gate_default

V = {minor: KubeVersion(1, minor) for minor in range(28, 38)}
SPEC = FieldPath.of("spec")


# ---- the table --------------------------------------------------------------------------------


def _schema_fields(root: Path, minor: int) -> set[tuple[str, ...]]:
    defs = json.loads((root / f"v1.{minor}.0-local" / "_definitions.json").read_text())["$defs"]
    out: set[tuple[str, ...]] = set()

    def walk(schema: dict[str, Any], path: tuple[str, ...], seen: frozenset[str]) -> None:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            if name not in seen:
                walk(defs[name], path, seen | {name})
            return
        for key, sub in (schema.get("properties") or {}).items():
            out.add(path + (key,))
            walk(sub, path + (key,), seen)
        if "items" in schema:
            walk(schema["items"], path[:-1] + (path[-1] + "[]",), seen)

    walk(defs["io.k8s.api.core.v1.PodSpec"], (), frozenset())
    return out


def test_the_field_table_is_what_the_schemas_say():
    """FIELDS holds each Pod field added or removed after 1.28 (the outermost one of a new
    subtree), as the schemas kubernetes-validate ships for 1.28 to 1.37 say."""
    kv = pytest.importorskip("kubernetes_validate")
    root = Path(kv.__file__).parent / "kubernetes-json-schema"
    expected: dict[str, Span] = {}
    before = _schema_fields(root, 28)
    for minor in range(29, 38):
        now = _schema_fields(root, minor)
        for key in _outermost(now - before):
            expected[key] = Span(minor, expected[key].removed) if key in expected else Span(minor)
        for key in _outermost(before - now):
            expected[key] = Span(expected[key].added if key in expected else None, minor)
        before = now
    assert expected == FIELDS


def _outermost(paths: set[tuple[str, ...]]) -> list[str]:
    keys = {".".join(p) for p in paths}
    return [k for k in keys if not any(k.startswith(other + ".") or k.startswith(other + "[].") for other in keys)]


def test_options_follow_the_gates_defaults():
    assert DEFAULT_OPTIONS == options_for(OLDEST)
    assert DEFAULT_OPTIONS.gates == frozenset()  # nothing Pod validation reads is on by default in 1.28
    assert options_for(V[29]).on("SidecarContainers") and options_for(V[28]).is_off("SidecarContainers")
    # a gate that does not exist yet is neither on nor off: nothing is dropped for it
    assert not options_for(V[31]).on("PodLifecycleSleepActionAllowZero") and not options_for(V[31]).is_off("PodLifecycleSleepActionAllowZero")
    assert options_for(V[32]).is_off("PodLifecycleSleepActionAllowZero") and options_for(V[33]).on("PodLifecycleSleepActionAllowZero")
    assert gate_default("DynamicResourceAllocation", V[33]) is False and gate_default("DynamicResourceAllocation", V[34]) is True
    assert [str(v) for v in PORTED] == [f"1.{m}" for m in range(OLDEST.minor, NEWEST.minor + 1)]
    assert all(minor <= NEWEST.minor for specs in GATES.values() for minor, _ in specs)


def test_a_newer_cluster_is_judged_as_the_newest_minor_and_says_so():
    newer = KubeVersion(1, NEWEST.minor + 1)
    opts = options_for(newer)
    assert opts.version == NEWEST and opts.cluster == newer
    assert options_for(NEWEST).cluster is None
    spec = pod({"readinessProbe": {"httpGet": {"path": "/", "port": 80, "protocol": "HTTP1"}}})
    dropped = prepare_spec(spec, opts)
    # judged as 1.37: its H2CContainerProbe gate is off, so the field is dropped as 1.37 drops it
    assert [".".join(map(str, d.path)) for d in dropped] == ["containers.0.readinessProbe.httpGet.protocol"]
    assert not dropped[0].kept and "H2CContainerProbe is off by default in Kubernetes 1.37" in dropped[0].reason
    assert "protocol" not in spec["containers"][0]["readinessProbe"]["httpGet"]
    assert not pod_spec_errors(spec, SPEC, is_pod=True, opts=opts)


@pytest.mark.parametrize(
    ("minor", "why"),
    [
        (35, {"schedulingGroup": "feature gate GenericWorkload is off", "evictionResponders": "has no such Pod field"}),
        (36, {"schedulingGroup": "feature gate GenericWorkload is off", "evictionResponders": "has no such Pod field"}),
        (37, {"schedulingGroup": "feature gate GenericWorkload is off", "evictionResponders": "feature gate EvictionRequestAPI is off"}),
    ],
    ids=["1.35", "1.36", "1.37"],
)
def test_the_newest_fields_are_dropped_unknown_or_gated_off(minor, why):
    """schedulingGroup (1.36, GenericWorkload alpha, beta and off in 1.37) and evictionResponders
    (1.37, EvictionRequestAPI alpha): every default server drops both, as kube-apiservers 1.35.4,
    1.36.3 and 1.37.2 did (tests/oracle)."""
    spec = pod({})
    spec["schedulingGroup"] = {"podGroupName": "g"}
    spec["evictionResponders"] = [{"name": "example.com/drain", "priority": 1}]
    found = {d.path[0]: d for d in prepare_spec(spec, options_for(V[minor]))}
    assert {name: (not d.kept and why[name] in d.reason) for name, d in found.items()} == {name: True for name in why}
    assert set(spec) & {"schedulingGroup", "evictionResponders"} == set()


# ---- sleep hooks (KEP-3960, KEP-4818) -------------------------------------------------------------

PRESTOP_SLEEP = {"lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}


def test_a_prestop_with_only_sleep_at_1_28_is_the_empty_hook_the_server_sees():
    """1.28's schema has no `sleep`: decoding drops it and the hook has no handler left
    (the ms-lifecycle-sleep-unknown-in-1-28 case of the recorded corpus, as a template)."""
    errs, dropped = judge(pod(PRESTOP_SLEEP), 28)
    assert errs == [
        ("FieldValueRequired", "spec.containers[0].lifecycle.preStop", "spec.containers[0].lifecycle.preStop: Required value: must specify a handler type")
    ]
    assert dropped == ["containers.0.lifecycle.preStop.sleep"]


def test_sleep_with_its_gate_off_takes_the_hook_along():
    """pkg/api/pod/util_test.go TestDropPodLifecycleSleepAction: with PodLifecycleSleepAction off
    (1.29), a hook whose only handler is sleep is dropped whole; one with another handler keeps it."""
    errs, dropped = judge(pod(PRESTOP_SLEEP), 29)
    assert errs == [] and dropped == ["containers.0.lifecycle.preStop"]
    both = {"lifecycle": {"postStart": {"sleep": {"seconds": 1}, "exec": {"command": ["true"]}}}}
    errs, dropped = judge(pod(both), 29)
    assert dropped == ["containers.0.lifecycle.postStart.sleep"] and errs == []


@pytest.mark.parametrize("minor", range(30, 35))
def test_a_valid_sleep_is_admitted_from_1_30(minor):
    """validation_test.go TestValidateContainers, the successCase with a preStop sleep."""
    assert judge(pod(PRESTOP_SLEEP), minor) == ([], [])


@pytest.mark.parametrize(
    "minor, message",
    [
        (30, "must be greater than 0 and less than terminationGracePeriodSeconds (30)"),
        (31, "must be greater than 0 and less than terminationGracePeriodSeconds (30)"),
        (
            32,
            "must be greater than 0 and less than terminationGracePeriodSeconds (30). Please enable "
            "PodLifecycleSleepActionAllowZero feature gate if you need a sleep of zero duration.",
        ),
        (33, None),
        (34, None),
    ],
)
def test_a_zero_sleep_by_minor(minor, message):
    """validation_test.go TestValidateSleepAction ("zero sleep seconds", with
    AllowPodLifecycleSleepActionZeroValue off and on): refused until 1.32, allowed from 1.33."""
    errs, _ = judge(pod({"lifecycle": {"preStop": {"sleep": {"seconds": 0}}}}), minor)
    at = "spec.containers[0].lifecycle.preStop.sleep"
    assert errs == ([] if message is None else [("FieldValueInvalid", at, f"{at}: Invalid value: 0: {message}")])


@pytest.mark.parametrize(
    "minor, message",
    [
        (30, "must be greater than 0 and less than terminationGracePeriodSeconds (10)"),
        (34, "must be non-negative and less than terminationGracePeriodSeconds (10)"),
    ],
)
def test_a_sleep_longer_than_the_grace_period(minor, message):
    """validation_test.go TestValidateSleepAction ("sleep seconds greater than grace period")."""
    errs, _ = judge(pod({"lifecycle": {"preStop": {"sleep": {"seconds": 11}}}}, terminationGracePeriodSeconds=10), minor)
    at = "spec.containers[0].lifecycle.preStop.sleep"
    assert errs == [("FieldValueInvalid", at, f"{at}: Invalid value: 11: {message}")]


def test_sleep_and_another_handler_is_more_than_one_handler():
    """validation_test.go TestValidateHandler-style case: sleep is judged last among a hook's kinds."""
    both = {"lifecycle": {"preStop": {"exec": {"command": ["true"]}, "sleep": {"seconds": 1}}}}
    errs, _ = judge(pod(both), 34)
    at = "spec.containers[0].lifecycle.preStop.sleep"
    assert errs == [("FieldValueForbidden", at, f"{at}: Forbidden: may not specify more than 1 handler type")]


def test_a_sleep_of_the_wrong_type_is_a_field_error():
    errs, _ = judge(pod({"lifecycle": {"preStop": {"sleep": {"seconds": "five"}}}}), 34)
    assert [e[:2] for e in errs] == [("FieldValueTypeInvalid", "spec.containers[0].lifecycle.preStop.sleep.seconds")]


# ---- native sidecars (KEP-753) --------------------------------------------------------------------

PROBE = {"exec": {"command": ["true"]}}
SIDECAR = {
    "restartPolicy": "Always",
    "lifecycle": {"preStop": {"exec": {"command": ["true"]}}},
    "livenessProbe": PROBE,
    "readinessProbe": PROBE,
    "startupProbe": PROBE,
}


def test_a_sidecar_at_1_28_loses_its_restart_policy_and_keeps_the_forbidden_fields():
    """util_test.go TestDropSidecarContainers: with SidecarContainers off (1.28) the init
    container's restartPolicy is dropped, so validateInitContainers forbids its hook and probes."""
    errs, dropped = judge(pod(inits=(SIDECAR,)), 28)
    assert dropped == ["initContainers.0.restartPolicy"]
    assert [(kind, field) for kind, field, _ in errs] == [
        ("FieldValueForbidden", f"spec.initContainers[0].{key}") for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")
    ]
    assert errs[0][2].endswith("may not be set for init containers without restartPolicy=Always")


@pytest.mark.parametrize("minor", range(29, 38))
def test_a_sidecar_is_admitted_from_1_29(minor):
    """validation_test.go TestValidateInitContainers, the successCase "container-3-restart-always-
    with-lifecycle-hook-and-probes"."""
    assert judge(pod(inits=(SIDECAR,)), minor) == ([], [])


@pytest.mark.parametrize(
    "minor, expected",
    [
        (28, ([], ["initContainers.0.restartPolicy"])),
        (
            29,
            (
                [
                    (
                        "FieldValueNotSupported",
                        "spec.initContainers[0].restartPolicy",
                        'spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"',
                    )
                ],
                [],
            ),
        ),
        (
            33,
            (
                [
                    (
                        "FieldValueNotSupported",
                        "spec.initContainers[0].restartPolicy",
                        'spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"',
                    )
                ],
                [],
            ),
        ),
        (34, ([], ["initContainers.0.restartPolicy"])),
        (35, ([], [])),
        (37, ([], [])),
    ],
)
def test_an_init_restart_policy_other_than_always(minor, expected):
    """validation_test.go TestValidateInitContainers ("Not supported RestartPolicy: Never"); at
    1.34 dropContainerRestartRules (ContainerRestartRules off) drops any value but Always first;
    from 1.35 (the gate on) validateContainerRestartPolicy admits Never and OnFailure."""
    assert judge(pod(inits=({"restartPolicy": "Never"},)), minor) == expected


@pytest.mark.parametrize(
    "minor, expected",
    [
        (
            28,
            (
                [
                    (
                        "FieldValueForbidden",
                        "spec.containers[0].restartPolicy",
                        "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
                    )
                ],
                [],
            ),
        ),
        (
            33,
            (
                [
                    (
                        "FieldValueForbidden",
                        "spec.containers[0].restartPolicy",
                        "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
                    )
                ],
                [],
            ),
        ),
        (34, ([], ["containers.0.restartPolicy"])),
        (35, ([], [])),
        (37, ([], [])),
    ],
)
def test_an_app_container_restart_policy(minor, expected):
    """validation_test.go TestValidateContainers ("invalid restartPolicy" on a regular container);
    util_test.go TestDropContainerRestartRules for 1.34; admitted from 1.35 (ContainerRestartRules
    on)."""
    assert judge(pod({"restartPolicy": "Always"}), minor) == expected


@pytest.mark.parametrize(
    "change, field, body",
    [
        (
            {"startupProbe": {**PROBE, "successThreshold": 2}},
            "spec.initContainers[0].startupProbe.successThreshold",
            "spec.initContainers[0].startupProbe.successThreshold: Invalid value: 2: must be 1",
        ),
        (
            {"livenessProbe": {**PROBE, "successThreshold": 2}},
            "spec.initContainers[0].livenessProbe.successThreshold",
            "spec.initContainers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        ),
        (
            {"readinessProbe": {**PROBE, "terminationGracePeriodSeconds": 10}},
            "spec.initContainers[0].readinessProbe.terminationGracePeriodSeconds",
            "spec.initContainers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes",
        ),
        (
            {"lifecycle": {"preStop": {}}},
            "spec.initContainers[0].lifecycle.preStop",
            "spec.initContainers[0].lifecycle.preStop: Required value: must specify a handler type",
        ),
        (
            {"lifecycle": {"preStop": {"exec": {}}}},
            "spec.initContainers[0].lifecycle.preStop.exec.command",
            "spec.initContainers[0].lifecycle.preStop.exec.command: Required value",
        ),
        (
            {"lifecycle": {"preStop": {"sleep": {"seconds": 0}}}},
            "spec.initContainers[0].lifecycle.preStop.sleep",
            "spec.initContainers[0].lifecycle.preStop.sleep: Invalid value: 0: must be greater than 0 and less than terminationGracePeriodSeconds (30)",
        ),
    ],
)
def test_a_sidecars_hooks_and_probes_are_judged_as_an_app_containers(change, field, body):
    """validation_test.go TestValidateInitContainers errorCases for restartable init containers
    ("invalid startup probe in restartable container, successThreshold != 1", "invalid liveness
    probe, successThreshold != 1", "invalid readiness probe, terminationGracePeriodSeconds set.",
    "invalid lifecycle, no action.", "invalid lifecycle, no exec command."), at 1.30 where a zero
    sleep is still refused."""
    errs, _ = judge(pod(inits=({**SIDECAR, **change},)), 30)
    assert [(f, text) for _, f, text in errs] == [(field, body)]


# ---- fields every ported minor drops (their gates stay off through 1.34) ----------------------------


@pytest.mark.parametrize(
    "minor, left",
    [
        (32, {}),  # not in 1.32's schema: decoding drops the field alone, an empty lifecycle is fine
        (34, None),  # ContainerStopSignals is alpha, off: the emptied lifecycle goes too
    ],
)
def test_a_stop_signal_is_dropped(minor, left):
    """util_test.go TestDropContainerStopSignals. Nothing is left to refuse: validateContainer-
    StopSignal never runs at a minor we judge by."""
    spec = pod({"lifecycle": {"stopSignal": "SIGUSR1"}}, os={"name": "linux"})
    assert judge(spec, minor) == ([], ["containers.0.lifecycle.stopSignal"])
    prepared = copy.deepcopy(spec)
    prepare_spec(prepared, options_for(V[minor]))
    assert prepared["containers"][0].get("lifecycle") == left


@pytest.mark.parametrize("minor", [33, 34])
def test_a_file_key_ref_is_dropped_and_the_empty_source_judged(minor):
    """util_test.go TestDropFileKeyRef (EnvFiles off in 1.34; unknown before): the source is left
    empty, which validateEnvVarValueFrom refuses, as the server would."""
    env = [{"name": "TOKEN", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "env", "key": "TOKEN"}}}]
    errs, dropped = judge(pod({"env": env}), minor)
    assert dropped == ["containers.0.env.0.valueFrom.fileKeyRef"]
    assert [e[:2] for e in errs] == [("FieldValueInvalid", "spec.containers[0].env[0].valueFrom")]


def test_restart_rules_are_dropped_at_1_34_and_unknown_before():
    """util_test.go TestDropContainerRestartRules."""
    rules = {"restartPolicy": "Never", "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}
    errs, dropped = judge(pod(inits=(rules,)), 34)
    assert errs == [] and sorted(dropped) == ["initContainers.0.restartPolicy", "initContainers.0.restartPolicyRules"]
    errs, dropped = judge(pod(inits=(rules,)), 33)
    assert dropped == ["initContainers.0.restartPolicyRules"] and [e[1] for e in errs] == ["spec.initContainers[0].restartPolicy"]


def test_status_host_ips_is_allowed_once_pod_host_ips_is_on():
    """validation_test.go TestValidateEnv ("status.hostIPs" with PodHostIPs off/on)."""
    env = [{"name": "IPS", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIPs"}}}]
    assert [e[:2] for e in judge(pod({"env": env}), 28)[0]] == [("FieldValueForbidden", "spec.containers[0].env[0].valueFrom.fieldRef")]
    assert judge(pod({"env": env}), 29) == ([], [])


@pytest.mark.parametrize("minor", range(28, 38))
def test_no_minor_refuses_a_field_for_being_unknown(minor):
    """Every field of the table, at every minor: dropped or judged, never `unknown field`."""
    spec = pod(
        {
            "lifecycle": {"preStop": {"sleep": {"seconds": 5}, "httpGet": {"path": "/", "port": 80, "protocol": "HTTP"}}, "stopSignal": "SIGTERM"},
            "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
        },
        hostnameOverride="node",
        evictionResponders=[{"name": "x", "priority": 1}],
    )
    errs, _ = judge(spec, minor)
    assert not [e for e in errs if "unknown field" in e[2]]


IMAGE_VOLUME = {"volumes": [{"name": "weights", "image": {"reference": "registry/model:1", "pullPolicy": "IfNotPresent"}}, {"name": "scratch", "emptyDir": {}}]}
MOUNTS = {"volumeMounts": [{"name": "weights", "mountPath": "/models"}, {"name": "scratch", "mountPath": "/tmp/x"}]}


@pytest.mark.parametrize(
    "minor, dropped",
    [
        (30, ["volumes.0.image"]),  # not in 1.30's schema: the volume, left with no source, is an emptyDir
        (31, ["volumes.0"]),  # ImageVolume off (alpha, then beta off): the volume and its mounts go
        (34, ["volumes.0"]),
    ],
)
def test_an_image_volume_by_minor(minor, dropped):
    """util_test.go TestDropImageVolumes."""
    spec = pod(MOUNTS, **IMAGE_VOLUME)
    assert judge(spec, minor) == ([], dropped)
    prepared = copy.deepcopy(spec)
    prepare_spec(prepared, options_for(V[minor]))
    names = [m["name"] for m in prepared["containers"][0]["volumeMounts"]]
    assert names == (["weights", "scratch"] if minor == 30 else ["scratch"])


def test_a_spec_with_a_non_string_key_is_still_prepared():
    """A tree with a non-string key (YAML allows it) is walked like any other."""
    spec = pod(PRESTOP_SLEEP, nodeSelector={1: "x"})
    prepared = copy.deepcopy(spec)
    dropped = prepare_spec(prepared, options_for(V[28]))
    assert [d.path for d in dropped] == [("containers", 0, "lifecycle", "preStop", "sleep")]
    assert prepared["containers"][0]["lifecycle"] == {"preStop": {}}
