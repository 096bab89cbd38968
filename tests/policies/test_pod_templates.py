"""`modelservings.pod-templates`: the pods Kthena's controller makes from a ModelServing, judged as
the cluster's kube-apiserver judges Pods, with every error at the template's own path. The corpus
replay is at 1.28 (where it was recorded); the other cases hold at every minor unless they say so."""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import FIXTURES
from support.examples import examples

from webhook.admission.decision import Verdict
from webhook.admission.review import make_request
from webhook.kubeversion import OLDEST, KubeVersion
from webhook.policies import Context
from webhook.policies.kthena_pods import controller_pods
from webhook.policies.modelserving_pods import RULE, _reported_elsewhere
from webhook.policies.modelservings import check_pod_templates
from webhook.policies.settings import PolicySettings

CORPUS = json.loads((FIXTURES / "podspecs" / "corpus.json").read_text())["cases"]
POD_NAMING = ("metadata.name", "metadata.generateName")  # the Pod's own name; the controller names its pods


def _ms(*roles: dict[str, Any], name: str = "llm", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": name, "namespace": "ai"},
        "spec": {"replicas": 1, "template": {"roles": list(roles)}, **spec},
    }


def _role(name: str = "decode", workers: int = 0, **containers: Any) -> dict[str, Any]:
    main = {"name": "main", "image": "vllm:1", **containers}
    role: dict[str, Any] = {"name": name, "replicas": 1, "workerReplicas": workers, "entryTemplate": {"spec": {"containers": [main]}}}
    if workers:
        role["workerTemplate"] = copy.deepcopy(role["entryTemplate"])
    return role


def _verdict(req: Any, ctx: Context) -> Verdict:
    found = check_pod_templates(req, ctx)
    return found if isinstance(found, Verdict) else Verdict(errors=found)


def _errors(ms: dict[str, Any], old: dict[str, Any] | None = None, ctx: Context | None = None) -> list[str]:
    req = make_request(ms, operation="UPDATE" if old is not None else "CREATE", old=old)
    return [str(e) for e in _verdict(req, ctx or Context()).errors]


# ---- the oracle corpus: the ModelServing form gets the Pod's causes, at the template's paths ------


def _replayable(case: dict[str, Any]) -> bool:
    return not case["not_knowable_offline"] and case["modelserving_verdict"]["allowed"]


@pytest.mark.parametrize("case", [c for c in CORPUS if _replayable(c)], ids=lambda c: c["name"])
def test_the_modelserving_form_gets_the_pods_causes_at_the_template_paths(case):
    """Each case the CRD schema let through: our rule says what the API server said about the same
    spec as a Pod, at `spec.template.roles[0].<template>.`. Left out: causes about the Pod's own
    name (the controller names its pods), and causes another denying rule reports at that path."""
    ms, prefix = case["modelserving"], f"spec.template.roles[0].{case['template_field']}."
    req = make_request(ms, operation="CREATE")
    at_1_28 = Context(kubernetes_version=OLDEST)
    found = _verdict(req, at_1_28)
    ours = found.errors
    verdict = case["pod_verdict"]
    if verdict["code"] == 400:
        # The strict Pod did not decode (a field 1.28 does not know). The controller's pod is made
        # with the default field validation: the field is dropped with a warning, the rest judged
        # (test_a_field_1_28_does_not_know_is_dropped_and_the_rest_judged says what that gives).
        assert found.warnings and all(w.split(":")[0].replace(prefix, "") in verdict["message"] for w in found.warnings)
        return
    elsewhere = {str(p) for p in _reported_elsewhere(req, at_1_28, ms)}
    recorded = [(c["reason"], prefix + c["field"], c["message"]) for c in verdict["causes"] if c["field"] not in POD_NAMING]
    expected = [c for c in recorded if c[1] not in elsewhere]
    got = [(e.kind, e.field, e.body()) for e in ours]
    if verdict["cause_order_varies"]:
        assert Counter(got) == Counter(expected)
    else:
        assert got == expected


def test_the_replay_covers_the_corpus():
    replayed = [c for c in CORPUS if _replayable(c)]
    assert len(replayed) >= 300
    assert sum(not c["pod_verdict"]["allowed"] for c in replayed) >= 200


# ---- what the controller adds -------------------------------------------------------------------


def test_the_pods_carry_what_the_controller_adds():
    ms = _ms(_role(workers=2, env=[{"name": "A", "value": "1"}]))
    ms["metadata"]["uid"] = "u-1"
    entry, worker = (cp.pod for cp in controller_pods(ms))
    assert entry["metadata"]["name"] == "llm-0-decode-0-0" and worker["metadata"]["name"] == "llm-0-decode-0-1"
    assert entry["metadata"]["labels"]["modelserving.volcano.sh/entry"] == "true"
    assert "modelserving.volcano.sh/entry" not in worker["metadata"]["labels"]
    assert {"modelserving.volcano.sh/revision", "modelserving.volcano.sh/role-template-hash"} <= set(worker["metadata"]["labels"])
    assert entry["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "llm-0", "volcano.sh/task-spec": "decode-0"}
    assert entry["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "workload.serving.volcano.sh/v1alpha1",
            "kind": "ModelServing",
            "name": "llm",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert entry["spec"]["schedulerName"] == "volcano"
    assert worker["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "GROUP_SIZE", "value": "3"},
        {"name": "ENTRY_ADDRESS", "value": "llm-0-decode-0-0.ai"},
        {"name": "WORKER_INDEX", "value": "1"},
    ]
    assert ms["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_the_controllers_podgroup_annotations_win_and_the_templates_labels_win():
    """Issue 36 item 3, as kthena's controller writes them: createBasePod's labels, then the
    template's labels and annotations over them (utils.go addPodLabelAndAnnotation), then
    AnnotatePodWithPodGroup sets the two PodGroup annotations over the template's."""
    role = _role(workers=1)
    for which in ("entryTemplate", "workerTemplate"):
        role[which]["metadata"] = {
            "labels": {"modelserving.volcano.sh/role": "mine", "app": "a"},
            "annotations": {"scheduling.k8s.io/group-name": "elsewhere", "volcano.sh/task-spec": "t", "note": "n"},
        }
    for cp in controller_pods(_ms(role)):
        meta = cp.pod["metadata"]
        assert meta["annotations"] == {"scheduling.k8s.io/group-name": "llm-0", "volcano.sh/task-spec": "decode-0", "note": "n"}
        assert meta["labels"]["modelserving.volcano.sh/role"] == "mine" and meta["labels"]["app"] == "a"


@pytest.mark.parametrize(("scheduler", "crd"), [("volcano-npu", True), ("", True), ("volcano", False)])
def test_no_podgroup_annotations_where_kthena_makes_no_podgroup(scheduler, crd):
    role = _role()
    role["entryTemplate"]["metadata"] = {"annotations": {"note": "n"}}
    [entry] = controller_pods(_ms(role, schedulerName=scheduler), podgroup_crd=crd)
    assert entry.pod["metadata"]["annotations"] == {"note": "n"}


def test_a_template_variable_the_controller_replaces_shifts_no_path():
    env = [{"name": "GROUP_SIZE", "valueFrom": {"fieldRef": {"fieldPath": "bad"}}}, {"name": "B", "value": "1"}, {"name": "1C", "value": "2"}]
    assert _errors(_ms(_role(env=env)), ctx=Context(kubernetes_version=KubeVersion(1, 31))) == [
        'spec.template.roles[0].entryTemplate.spec.containers[0].env[2].name: Invalid value: "1C": a valid environment '
        "variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit "
        "(e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
    ]
    # from 1.32 (RelaxedEnvironmentVariableValidation) any printable name but one with '=' passes
    assert _errors(_ms(_role(env=env))) == []
    env[2]["name"] = "C=1"
    assert _errors(_ms(_role(env=env))) == [
        'spec.template.roles[0].entryTemplate.spec.containers[0].env[2].name: Invalid value: "C=1": a valid environment '
        "variable name must consist only of printable ASCII characters other than '='"
    ]


def test_equal_templates_are_judged_once_and_reported_at_each_path():
    """Roles with equal templates share one verdict per review; each template still gets it at its path."""
    bad: dict[str, Any] = {"ports": [{"containerPort": 0}], "env": [{"name": "GROUP_SIZE", "value": "9"}, {"name": "x=1"}]}
    alone = _errors(_ms(_role(workers=1, **copy.deepcopy(bad))))
    assert len(alone) == 4  # the entry's two causes, then the worker's
    twice = _errors(_ms(_role(workers=1, **copy.deepcopy(bad)), _role("prefill", workers=1, **copy.deepcopy(bad))))
    assert twice == alone + [e.replace("roles[0]", "roles[1]") for e in alone]
    assert 'spec.template.roles[1].workerTemplate.spec.containers[0].env[1].name: Invalid value: "x=1"' in twice[-1]


def test_templates_equal_only_to_python_are_judged_apart():
    """`1 == True` in Python, not in JSON: a spec is shared only with one written alike."""
    one, true = _role(), _role("prefill")
    one["entryTemplate"]["spec"]["activeDeadlineSeconds"] = 1
    true["entryTemplate"]["spec"]["activeDeadlineSeconds"] = True
    assert one["entryTemplate"] == true["entryTemplate"]
    for roles, bad in (((one, true), 1), ((true, one), 0)):
        errs = _errors(_ms(*copy.deepcopy(roles)))
        assert len(errs) == 1 and errs[0].startswith(f"spec.template.roles[{bad}].entryTemplate.spec.activeDeadlineSeconds: Invalid value: true")


def test_templates_json_cannot_write_are_still_told_apart():
    """A number past 64 bits has no JSON text for orjson: such specs are compared by `repr`, and
    each template still gets the verdict it gets alone."""
    big, near = _role(), _role("prefill")
    big["entryTemplate"]["spec"]["activeDeadlineSeconds"] = 2**64
    near["entryTemplate"]["spec"]["activeDeadlineSeconds"] = float(2**64)
    assert big["entryTemplate"] == near["entryTemplate"]
    alone = [_errors(_ms(copy.deepcopy(role))) for role in (big, near)]
    together = _errors(_ms(copy.deepcopy(big), copy.deepcopy(near)))
    assert together == alone[0] + [e.replace("roles[0]", "roles[1]") for e in alone[1]]


def test_errors_are_at_the_templates_paths_entry_and_worker():
    role = _role(workers=1, ports=[{"containerPort": 0}])
    role["workerTemplate"]["spec"]["containers"][0]["name"] = "Main"
    role["workerTemplate"]["metadata"] = {"labels": {"app": "bad value"}}
    errs = _errors(_ms(role))
    assert errs[0] == "spec.template.roles[0].entryTemplate.spec.containers[0].ports[0].containerPort: Required value"
    assert any(e.startswith('spec.template.roles[0].workerTemplate.metadata.labels: Invalid value: "bad value"') for e in errs)
    assert any(e.startswith('spec.template.roles[0].workerTemplate.spec.containers[0].name: Invalid value: "Main"') for e in errs)
    assert any(e.startswith("spec.template.roles[0].workerTemplate.spec.containers[0].ports[0].containerPort: Required value") for e in errs)


def test_a_worker_template_without_workers_is_not_judged():
    role = _role(workers=1)
    role["workerReplicas"] = 0
    role["workerTemplate"]["spec"]["containers"][0]["name"] = "Main"
    assert _errors(_ms(role)) == []


def test_an_npu_request_without_a_limit_is_refused():
    errs = _errors(_ms(_role(resources={"requests": {"huawei.com/Ascend910": "1"}})))
    assert errs == [
        "spec.template.roles[0].entryTemplate.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
    ]


def test_a_name_too_long_for_the_controller_labels_is_reported_once_at_metadata_name():
    ms = _ms(_role(workers=1), name="a" * 62)  # the group-name label, "<name>-0", is 64 characters
    errs = _errors(ms, ctx=Context(settings=PolicySettings(rule_actions={"modelservings.kthena.generated-names": "off"})))
    assert len(errs) == 1 and errs[0].startswith('metadata.name: Invalid value: "' + "a" * 62 + '-0": must be no more than 63 characters')
    assert _errors(ms) == []  # modelservings.kthena.generated-names already refuses that name


def test_an_uppercase_role_name_makes_an_invalid_pod_name_reported_at_the_role():
    ms = _ms(_role(name="Decode"))
    off = Context(settings=PolicySettings(rule_actions={"modelservings.kthena.role-names": "off"}))
    assert [e.split(":")[0] for e in _errors(ms, ctx=off)] == ["spec.template.roles[0].name"]
    assert _errors(ms) == []  # modelservings.kthena.role-names reports it


def test_an_image_of_spaces_is_reported_once_by_the_kthena_rule():
    ms = _ms(_role(image=" vllm:1"))
    assert _errors(ms) == []
    warn = Context(settings=PolicySettings(rule_actions={"modelservings.kthena.images": "warn"}))
    assert _errors(ms, ctx=warn) == [
        'spec.template.roles[0].entryTemplate.spec.containers[0].image: Invalid value: " vllm:1": must not have leading or trailing whitespace'
    ]


# ---- UPDATE: only what changed --------------------------------------------------------------------


def test_an_unchanged_broken_template_does_not_block_an_update():
    old = _ms(_role(workers=1, ports=[{"containerPort": 0}]))
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["metadata"]["labels"] = {"team": "a"}
    assert _errors(new, old=old) == []
    new["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["image"] = "vllm:2"
    assert [e.split(":")[0] for e in _errors(new, old=old)] == ["spec.template.roles[0].entryTemplate.spec.containers[0].ports[0].containerPort"]


def test_a_worker_template_coming_into_use_is_judged():
    old = _ms(_role(workers=1, ports=[{"containerPort": 0}]))
    old["spec"]["template"]["roles"][0]["workerReplicas"] = 0
    new = copy.deepcopy(old)
    new["spec"]["template"]["roles"][0]["workerReplicas"] = 2
    assert [e.split(":")[0] for e in _errors(new, old=old)] == ["spec.template.roles[0].workerTemplate.spec.containers[0].ports[0].containerPort"]


def test_kthenas_examples_pass(kit):
    assert _errors(kit.gang_ms()) == []


def test_the_rule_denies_by_default_and_follows_its_action(kit):
    ms = _ms(_role(ports=[{"containerPort": 0}]))
    assert RULE in kit.validate(ms).rules and not kit.validate(ms).allowed
    warned = kit.validate(ms, ctx=kit.ctx(rule_actions={RULE: "warn"}))
    assert warned.allowed and any("containerPort" in w.text for w in warned.warnings)


# ---- bad input: field errors, never a crash -------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers(-3, 70000) | st.text(max_size=6) | st.sampled_from(["1Gi", "x y", "GROUP_SIZE", "0.5"])
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "image",
                    "env",
                    "ports",
                    "containerPort",
                    "value",
                    "valueFrom",
                    "resources",
                    "limits",
                    "requests",
                    "labels",
                    "annotations",
                    "containers",
                    "initContainers",
                    "spec",
                    "metadata",
                    "volumeMounts",
                    "volumes",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=16,
)


@settings(max_examples=examples(300), deadline=None)
@given(template=_json, workers=st.integers(-1, 3) | st.text(max_size=2), role_name=st.text(max_size=6) | st.integers())
def test_any_template_gives_field_errors_never_a_crash(template, workers, role_name):
    role = {"name": role_name, "replicas": 1, "workerReplicas": workers, "entryTemplate": template, "workerTemplate": template}
    for errs in (_errors(_ms(role)), _errors(_ms(role), old=_ms(_role()))):
        assert all(isinstance(e, str) for e in errs)


@settings(max_examples=examples(200), deadline=None)
@given(containers=_json, env=_json)
def test_any_container_list_or_env_gives_field_errors(containers, env):
    role = _role(workers=1, env=env)
    role["workerTemplate"]["spec"]["containers"] = containers
    _errors(_ms(role))


# ---- the metadata fast path: each pod's metadata judged whole only when not surely valid ----------

_META_KEYS = st.sampled_from(
    [
        "app",
        "a/b",
        "Bad Key",
        "x" * 64,
        "kubernetes.io/config.mirror",
        "modelserving.volcano.sh/role",
        "controller.kubernetes.io/pod-deletion-cost",
        "volcano.sh/task-spec",
        "container.apparmor.security.beta.kubernetes.io/main",
    ]
)
_META_VALUES = st.sampled_from(["v", "-v", "", "12", "runtime/default", "y" * 70, 3, None])
_meta = st.fixed_dictionaries(
    {},
    optional={
        "labels": st.dictionaries(_META_KEYS, _META_VALUES, max_size=3) | st.sampled_from(["x", None, []]),
        "annotations": st.dictionaries(_META_KEYS, _META_VALUES, max_size=3) | st.sampled_from(["x", None]),
    },
) | st.sampled_from([None, "x", []])


@settings(max_examples=examples(300), deadline=None)
@given(
    entry=_meta,
    worker=_meta,
    ms_name=st.sampled_from(["llm", "Bad", "x" * 60, "a" * 64]),
    role_name=st.sampled_from(["decode", "Dec", "", "-x"]),
    scheduler=st.sampled_from(["volcano", "default-scheduler"]),
)
def test_the_metadata_fast_path_gives_the_verdict_of_each_pod_judged_whole(entry, worker, ms_name, role_name, scheduler):
    """`_Review.metadata_fine` skips building and judging a pod's metadata: what it skips changes no error."""
    from webhook.policies import modelserving_pods

    role = _role(role_name, workers=1)
    role["entryTemplate"]["metadata"], role["workerTemplate"]["metadata"] = entry, worker
    ms = _ms(role, _role("prefill", workers=1), name=ms_name, schedulerName=scheduler)
    fast = _errors(copy.deepcopy(ms))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(modelserving_pods._Review, "metadata_fine", lambda *args: False)
        assert _errors(copy.deepcopy(ms)) == fast


# ---- by Kubernetes minor ----------------------------------------------------------------------------


def _drain_and_sidecar() -> dict[str, Any]:
    """An LLM server that drains with a preStop sleep, and a native model-sync sidecar."""
    role = _role(lifecycle={"preStop": {"sleep": {"seconds": 10}}})
    spec = role["entryTemplate"]["spec"]
    spec["initContainers"] = [
        {"name": "model-sync", "image": "sync:1", "restartPolicy": "Always", "readinessProbe": {"exec": {"command": ["test", "-f", "/ready"]}}}
    ]
    return _ms(role)


def test_preStop_sleep_and_a_native_sidecar_are_admitted_at_1_34():
    found = _verdict(make_request(_drain_and_sidecar(), operation="CREATE"), Context(kubernetes_version=KubeVersion(1, 34)))
    assert found.errors == [] and found.warnings == []


def test_at_1_28_they_get_the_1_28_answers_and_the_dropped_fields_are_warned_of():
    found = _verdict(make_request(_drain_and_sidecar(), operation="CREATE"), Context(kubernetes_version=OLDEST))
    at = "spec.template.roles[0].entryTemplate.spec."
    assert [str(e) for e in found.errors] == [
        f"{at}containers[0].lifecycle.preStop: Required value: must specify a handler type",
        f"{at}initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
    ]
    assert sorted(w.split(": dropped: ")[0] for w in found.warnings) == [f"{at}containers[0].lifecycle.preStop.sleep", f"{at}initContainers[0].restartPolicy"]
    assert any("Kubernetes 1.28 has no such Pod field (added in 1.29)" in w for w in found.warnings)
    assert any("the feature gate SidecarContainers is off by default in Kubernetes 1.28" in w for w in found.warnings)


def test_a_cluster_newer_than_we_know_is_judged_as_the_newest_and_told_so():
    role = _role(readinessProbe={"httpGet": {"path": "/health", "port": 8000, "protocol": "HTTP1"}})
    found = _verdict(make_request(_ms(role), operation="CREATE"), Context(kubernetes_version=KubeVersion(1, 38)))
    assert found.errors == []
    assert found.warnings == [
        "spec.template.roles[0].entryTemplate.spec.containers[0].readinessProbe.httpGet.protocol: dropped: the feature gate"
        " H2CContainerProbe is off by default in Kubernetes 1.37, so the API server drops it (the cluster runs Kubernetes 1.38,"
        " newer than 1.37, the newest whose Pod validation we mirror: judged as 1.37)"
    ]


def test_a_controller_env_var_shifts_no_dropped_path():
    """A dropped field under `env` is warned of at the template's own index (the controller adds
    its variables to the pod's env)."""
    env = [{"name": "A", "value": "1"}, {"name": "T", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k"}}}]
    found = _verdict(make_request(_ms(_role(env=env)), operation="CREATE"), Context(kubernetes_version=KubeVersion(1, 34)))
    assert [w.split(": dropped: ")[0] for w in found.warnings] == ["spec.template.roles[0].entryTemplate.spec.containers[0].env[1].valueFrom.fileKeyRef"]


_newer_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "image",
                    "lifecycle",
                    "preStop",
                    "postStart",
                    "sleep",
                    "seconds",
                    "exec",
                    "stopSignal",
                    "restartPolicy",
                    "restartPolicyRules",
                    "readinessProbe",
                    "startupProbe",
                    "env",
                    "valueFrom",
                    "fileKeyRef",
                    "volumes",
                    "image",
                    "volumeMounts",
                    "recursiveReadOnly",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=16,
)


@settings(max_examples=examples(200), deadline=None)
@given(container=_newer_json, init=_newer_json, minor=st.integers(28, 38))
def test_newer_fields_of_any_shape_give_field_errors_at_any_minor(container, init, minor):
    """The drops and the newer checks meet wrong types too: field errors, never a crash."""
    role = _role(workers=1)
    spec = role["entryTemplate"]["spec"]
    spec["containers"].append(container)
    spec["initContainers"] = [init]
    found = _verdict(make_request(_ms(role), operation="CREATE"), Context(kubernetes_version=KubeVersion(1, minor)))
    assert all(isinstance(str(e), str) for e in found.errors) and all(isinstance(w, str) for w in found.warnings)


def _anti_affinity_on(key: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {key: "x"}}, "topologyKey": "kubernetes.io/hostname", "matchLabelKeys": [key]}
            ]
        }
    }


@pytest.mark.parametrize("labels", [None, {"app": "llm"}], ids=["controller-labels-only", "template-labels"])
def test_a_match_label_key_the_pods_carry_and_the_selector_names_is_refused_at_1_34(labels):
    """Kthena's pods carry the template's labels and its own: the API server appends each carried
    matchLabelKeys key to the selector and refuses the key named twice (mutatePodAffinity)."""
    key = "app" if labels else "modelserving.volcano.sh/role"
    role = _role()
    role["entryTemplate"]["spec"]["affinity"] = _anti_affinity_on(key)
    if labels:
        role["entryTemplate"]["metadata"] = {"labels": labels}
    found = _verdict(make_request(_ms(role), operation="CREATE"), Context(kubernetes_version=KubeVersion(1, 34)))
    at = "spec.template.roles[0].entryTemplate.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]"
    assert [str(e) for e in found.errors] == [f'{at}: Invalid value: "{key}": exists in both matchLabelKeys and labelSelector']
    role["entryTemplate"]["spec"]["affinity"] = _anti_affinity_on("not-carried")
    assert _verdict(make_request(_ms(role), operation="CREATE"), Context(kubernetes_version=KubeVersion(1, 34))).errors == []
