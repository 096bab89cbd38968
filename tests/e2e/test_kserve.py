"""Scenario 8, KServe autoscaling beside us: the ACK guide's InferenceService `qwen-cronhpa`
(predictor minReplicas 1, maxReplicas 10, scaleMetric cpu, scaleTarget 10) with KServe's controller
manager in Standard mode (no Knative, no Istio) and our webhook judging InferenceServices.

- The guide's InferenceService, annotated `Standard`, annotated `RawDeployment` (deprecated: KServe's
  defaulting webhook rewrites it to `Standard`) and with no annotation (the mode of KServe's
  `inferenceservice-config`, which its defaulting webhook writes in): KServe makes the Deployment
  `qwen-cronhpa-predictor` and its HPA (min 1, max 10, cpu at 10%); none of KServe's writes is refused
  by us (our refusals and the API server's rejections through our entry stay at zero, no event of
  KServe's names an admission webhook) and the InferenceService becomes Ready. Raising minReplicas to 2
  makes KServe raise its HPA's, and the real HPA controller (kube-controller-manager's; no metrics
  server) scales the Deployment up to it.
- Bounds at apply: minReplicas above maxReplicas, a negative minReplicas, a negative or zero
  scaleTarget, an unknown scaleMetric: refused at apply, and our webhook asked alone names the field;
  beside it what KServe's own webhook says of the same object (`KSERVE_SAYS`).
- A bound KServe admits but does not honour as written: minReplicas 0 in Standard mode is admitted by
  KServe and its HPA gets minReplicas 1; we admit it too, with a warning saying so.
- KServe's webhook as an oracle: the guide's InferenceService and variations of it (ours and those of
  KServe's validation tests) sent to both webhooks, after KServe's defaulting as the API server would;
  ours never refuses what KServe admits except where listed as by design (`STRICTER_BY_DESIGN`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.e2e import (
    ISVC_GROUP,
    ISVC_VERSION,
    KSERVE_MODE,
    Cluster,
    OurWebhook,
    Refusals,
    ask,
    create_request,
    guide_isvc,
    hook_url,
    kserve_defaulted,
    ours,
    poll,
    running_ready,
)

KSERVE_NAMESPACE = "kserve"  # where KServe's chart puts its controller and inferenceservice-config
PREDICTOR = "qwen-cronhpa-predictor"
PLURAL = "inferenceservices"
OUR_ENTRY = "kserve.validate.servinggate.io"  # our webhook's entry for InferenceServices
# What KServe aaac4e29's validating webhook answers, on the stack (KServe alone, after its defaulting):
# None where it admits. Recorded in docs/e2e.md; the test prints what it got.
KSERVE_SAYS = {
    "minReplicas above maxReplicas": "'MinReplicas' cannot be greater than MaxReplicas",
    "a negative minReplicas": "'MinReplicas' cannot be less than 0",
    "a negative scaleTarget": None,  # Standard mode without serving.kserve.io/autoscalerClass: not checked
    "a zero scaleTarget": None,
    "an unknown scaleMetric": None,  # the CRD's enum refuses it before any validating webhook
}


def kserve_default_mode(cluster: Cluster) -> str | None:
    """`deploy.defaultDeploymentMode` of KServe's inferenceservice-config, or None when unreadable."""
    try:
        config = cluster.core.read_namespaced_config_map("inferenceservice-config", KSERVE_NAMESPACE)
        return str(json.loads((config.data or {}).get("deploy") or "{}").get("defaultDeploymentMode")) or None
    except Exception:
        return None


def refusals_in_events(cluster: Cluster, ns: str) -> list[str]:
    """Events of the namespace saying an admission webhook refused a write (KServe records each failed
    reconcile as a Warning event with the API server's answer; the ReplicaSet controller too)."""
    out = []
    for event in cluster.core.list_namespaced_event(ns).items:
        message = event.message or ""
        if event.type == "Warning" and ("admission webhook" in message or "denied the request" in message):
            out.append(f"{event.involved_object.kind}/{event.involved_object.name}: {message}")
    return out


@pytest.mark.parametrize("mode", ["Standard", "RawDeployment", None], ids=["Standard", "RawDeployment", "config-map-mode"])
def test_the_guides_inferenceservice_autoscales_beside_us(cluster: Cluster, need, servinggate: OurWebhook, namespace: str, mode: str | None) -> None:
    need("kserve", "kwok", "kube-scheduler")
    default = kserve_default_mode(cluster)
    if mode is None and default not in ("Standard", "RawDeployment"):
        pytest.skip(f"kserve: {KSERVE_NAMESPACE}/inferenceservice-config's default deployment mode is {default!r}, not Standard (needs Knative)")
    cluster.node(f"{namespace}-n0", namespace, npu=0)
    counts = Refusals(cluster, servinggate, PLURAL, OUR_ENTRY)
    status, body, warnings = cluster.apply_custom(namespace, ISVC_GROUP, ISVC_VERSION, PLURAL, guide_isvc(namespace, mode))
    assert status == 201, body
    print(f"\nwarnings at apply ({mode}): {warnings}")
    # KServe's defaulting wrote the mode it deploys in: Standard for each of the three
    assert cluster.get_isvc(namespace, "qwen-cronhpa")["metadata"]["annotations"][KSERVE_MODE] == "Standard"

    hpa = poll(lambda: cluster.hpa(namespace, PREDICTOR), 60, "KServe's HPA")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": PREDICTOR}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 10)
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 10}}}]
    poll(lambda: cluster.isvc_conditions(namespace, "qwen-cronhpa").get("Ready") == "True", 120, "the InferenceService Ready")
    assert cluster.get_isvc(namespace, "qwen-cronhpa")["status"]["deploymentMode"] == "Standard"
    assert cluster.core.read_namespaced_service(PREDICTOR, namespace).spec.selector == {"app": f"isvc.{PREDICTOR}"}  # KServe's Service

    # the real HPA controller holds the predictor at KServe's bounds: minReplicas 1 -> 2 raises it
    cluster.patch_isvc(namespace, "qwen-cronhpa", {"spec": {"predictor": {"minReplicas": 2}}})
    poll(lambda: cluster.hpa(namespace, PREDICTOR)["spec"]["minReplicas"] == 2, 60, "KServe raising its HPA's minReplicas")
    pods = poll(
        lambda: (
            (d := cluster.deployment(namespace, PREDICTOR))
            and d.spec.replicas == 2
            and (ps := cluster.pods(namespace))
            and len(ps) == 2
            and all(map(running_ready, ps))
            and ps
        ),
        120,
        "the predictor at 2 running pods",
    )
    assert all(p.spec.node_name == f"{namespace}-n0" for p in pods)
    rescaled = [e.message for e in cluster.core.list_namespaced_event(namespace, field_selector="reason=SuccessfulRescale").items]
    assert any("below Spec.MinReplicas" in m for m in rescaled), rescaled  # the HPA controller's, not KServe's
    poll(lambda: cluster.isvc_conditions(namespace, "qwen-cronhpa").get("Ready") == "True", 60, "Ready after the scale")

    # nothing of KServe's (its finalizer, its updates) nor ours refused: our metric, the API server's, the events
    seen = counts.since()
    assert seen["refused"] == 0 and seen["rejected"] == 0, seen
    assert seen["allowed"] >= 2, seen  # the apply and the patch at least (KServe's finalizer patch too)
    assert refusals_in_events(cluster, namespace) == []


# ---- bounds at apply ----------------------------------------------------------------------------

BOUNDS: dict[str, tuple[dict[str, Any], str]] = {
    # case -> (predictor fields over the guide's, the field our refusal names)
    "minReplicas above maxReplicas": ({"minReplicas": 5, "maxReplicas": 2}, "spec.predictor.maxReplicas"),
    "a negative minReplicas": ({"minReplicas": -1}, "spec.predictor.minReplicas"),
    "a negative scaleTarget": ({"scaleTarget": -5}, "spec.predictor.scaleTarget"),
    "a zero scaleTarget": ({"scaleTarget": 0}, "spec.predictor.scaleTarget"),
    "an unknown scaleMetric": ({"scaleMetric": "gpu-duty"}, "spec.predictor.scaleMetric"),
}


def guide_with(owner: str, mode: str | None = "Standard", **fields: Any) -> dict:
    isvc = guide_isvc(owner, mode)
    isvc["spec"]["predictor"].update(fields)
    return isvc


def verdicts(cluster: Cluster, hook: OurWebhook, ns: str, isvc: dict) -> tuple[dict, dict]:
    """(KServe's answer, ours) to the create of `isvc`, each asked alone, after KServe's defaulting."""
    kserve = hook_url(cluster, "validating", PLURAL)
    if kserve is None:
        pytest.skip("kserve: no validating webhook for inferenceservices reachable by URL (KServe's webhook off, or service-based)")
    request = create_request(ns, kserve_defaulted(cluster, ns, isvc), ISVC_GROUP, ISVC_VERSION, "InferenceService", PLURAL)
    return ask(*kserve, request), ask(*ours(hook), request)


def message(answer: dict) -> str | None:
    return None if answer["allowed"] else str((answer.get("status") or {}).get("message"))


@pytest.mark.parametrize("case", list(BOUNDS))
def test_bounds_are_refused_at_apply_naming_the_field(cluster: Cluster, need, servinggate: OurWebhook, namespace: str, case: str, record_property) -> None:
    need("kserve")
    fields, path = BOUNDS[case]
    isvc = guide_with(namespace, **fields)
    status, body, _ = cluster.apply_custom(namespace, ISVC_GROUP, ISVC_VERSION, PLURAL, isvc)
    assert status in (400, 403, 422), body
    said = str(body.get("message"))
    theirs, mine = verdicts(cluster, servinggate, namespace, isvc)
    record_property("kserve_bounds", json.dumps({"case": case, "apply": said, "kserve": message(theirs), "ours": message(mine)}))
    print(f"\n{case}:\n  kubectl apply: {said}\n  KServe alone:  {message(theirs)}\n  ours alone:    {message(mine)}")
    assert mine["allowed"] is False and path in str(message(mine)), mine
    assert message(theirs) == KSERVE_SAYS[case], theirs
    if case == "an unknown scaleMetric":
        assert "Unsupported value" in said and path in said, said  # the CRD's enum, before any webhook
    elif KSERVE_SAYS[case] is None:
        assert path in said, said  # ours is the refusal kubectl prints: KServe's webhook admits it


@pytest.mark.parametrize("mode", ["Standard", "RawDeployment"])
def test_min_replicas_zero_is_admitted_with_what_kserve_does_instead(cluster: Cluster, need, servinggate: OurWebhook, namespace: str, mode: str) -> None:
    """KServe admits minReplicas 0 in Standard (and RawDeployment) mode; its HPA reconciler gives the
    HPA minReplicas 1 (createHPA: below DefaultMinReplicas becomes 1). Never stricter than KServe: we
    admit it, and warn that the predictor will keep at least one replica."""
    need("kserve")
    isvc = guide_with(namespace, mode, minReplicas=0)
    theirs, mine = verdicts(cluster, servinggate, namespace, isvc)
    assert theirs["allowed"], theirs
    # the object as written (RawDeployment not yet normalised), as a cluster without KServe's defaulting sends it
    raw = ask(*ours(servinggate), create_request(namespace, isvc, ISVC_GROUP, ISVC_VERSION, "InferenceService", PLURAL))
    status, body, warnings = cluster.apply_custom(namespace, ISVC_GROUP, ISVC_VERSION, PLURAL, isvc)
    print(f"\nminReplicas 0 ({mode}): apply {status} {body.get('message')}; warnings {warnings}; ours alone as written: {message(raw)}")
    assert status == 201, body
    hpa = poll(lambda: cluster.hpa(namespace, PREDICTOR), 60, "KServe's HPA")
    assert hpa["spec"]["minReplicas"] == 1, hpa["spec"]  # what KServe does instead of 0
    assert mine["allowed"] and raw["allowed"], (mine, raw)
    assert [w for w in warnings if "minReplicas" in w and "1" in w], warnings


# ---- deployment modes and KServe's webhook as an oracle ---------------------------------------

# Where ours refuses and KServe's webhook admits, on purpose: case -> why.
STRICTER_BY_DESIGN = {
    "a negative scaleTarget": "the API server refuses the HPA KServe writes (averageUtilization must be greater than 0): the predictor is never made",
    "a zero scaleTarget": "the same HPA refusal",
    "an unknown mode word, rps": "KServe's controller makes nothing in a mode it does not know (test_an_unknown_mode_word_kserve_admits_is_refused)",
    "an unknown mode word, nothing about scaling": "the same: KServe's controller makes nothing, whatever the spec says",
}


# Where KServe's webhook refuses and ours admits, on purpose: the autoScaling.metrics KServe's
# webhook judges itself (ours reads only the replica bounds, scaleMetric and scaleTarget).
LOOSER_BY_DESIGN = {
    "kserve: HPA metric without its resource": "autoScaling.metrics: KServe's webhook refuses it itself",
    "kserve: HPA with an External metric": "autoScaling.metrics: KServe's webhook refuses it itself",
}


def isvc_cases(owner: str) -> dict[str, dict]:
    """The guide's InferenceService and one variation per check of KServe's validator (validateReplicas,
    validateAutoScalingCompExtension, validateInferenceServiceAutoscaler, the mode words) and of ours."""
    cases: dict[str, dict] = {}

    def case(name: str, mode: str | None = "Standard", notes: dict[str, str] | None = None, **fields: Any) -> None:
        isvc = guide_with(owner, mode, **fields)
        if notes:
            isvc["metadata"].setdefault("annotations", {}).update(notes)
        cases[name] = isvc

    hpa_class = {"serving.kserve.io/autoscalerClass": "hpa"}
    case("the guide's, Standard")
    case("the guide's, RawDeployment", "RawDeployment")
    case("the guide's, no mode annotation", None)
    case("minReplicas above maxReplicas", minReplicas=5, maxReplicas=2)
    case("minReplicas above maxReplicas, RawDeployment", "RawDeployment", minReplicas=5, maxReplicas=2)
    case("a negative minReplicas", minReplicas=-1)
    case("a negative maxReplicas", maxReplicas=-1)
    case("maxReplicas 0 (no limit) below minReplicas", minReplicas=3, maxReplicas=0)
    case("minReplicas 0, Standard", minReplicas=0)
    case("minReplicas 0, RawDeployment", "RawDeployment", minReplicas=0)
    case("minReplicas 0, no mode annotation", None, minReplicas=0)
    case("a negative scaleTarget", scaleTarget=-5)
    case("a zero scaleTarget", scaleTarget=0)
    case("scaleTarget above 100% cpu", scaleTarget=150)
    case("a negative scaleTarget, autoscalerClass hpa", notes=hpa_class, scaleTarget=-5)
    case("scaleTarget above 100% cpu, autoscalerClass hpa", notes=hpa_class, scaleTarget=150)
    case("a Knative metric, autoscalerClass hpa", notes=hpa_class, scaleMetric="concurrency")
    case("a Knative metric, Standard", scaleMetric="concurrency")
    case("memory at 50%", scaleMetric="memory", scaleTarget=50)
    case("an unknown autoscalerClass", notes={"serving.kserve.io/autoscalerClass": "bogus"})
    case("autoscalerClass none", notes={"serving.kserve.io/autoscalerClass": "none"})
    case("mode Serverless (Knative), cpu", "Serverless")
    case("mode Knative, cpu", "Knative")
    case("mode Knative, rps", "Knative", scaleMetric="rps")
    case("mode ModelMesh, cpu", "ModelMesh")
    case("an unknown mode word, cpu", "Turbo")
    case("an unknown mode word, rps", "Turbo", scaleMetric="rps")
    bare = cases["an unknown mode word, nothing about scaling"] = guide_with(owner, "Turbo")
    for key in ("minReplicas", "maxReplicas", "scaleMetric", "scaleTarget"):
        bare["spec"]["predictor"].pop(key, None)
    # KServe's own validation tests (pkg/apis/serving/v1beta1/inference_service_validation_test.go at
    # aaac4e29): TestAutoscalerClassHPA, TestAutoscalerClassKEDA, TestBadReplicaValues,
    # TestCustomizeDeploymentStrategyUnsupportedForServerless
    keda_class = {"serving.kserve.io/autoscalerClass": "keda"}

    def resource(name: str, target: dict[str, Any]) -> dict[str, Any]:
        return {"metrics": [{"type": "Resource", "resource": {"name": name, "target": target}}]}

    case("kserve: HPA cpu by scaleMetric", notes=hpa_class, scaleMetric="cpu", scaleTarget=80)
    case("kserve: HPA cpu by autoScaling", notes=hpa_class, autoScaling=resource("cpu", {"type": "Utilization", "averageUtilization": 80}))
    case("kserve: HPA memory by autoScaling", notes=hpa_class, autoScaling=resource("memory", {"type": "AverageValue", "averageValue": "1Gi"}))
    case("kserve: HPA metric without its resource", notes=hpa_class, autoScaling={"metrics": [{"type": "Resource"}]})
    case(
        "kserve: HPA with an External metric",
        notes=hpa_class,
        autoScaling={
            "metrics": [{"type": "External", "external": {"metric": {"backend": "prometheus", "query": "q"}, "target": {"type": "Value", "value": "1"}}}]
        },
    )
    case("kserve: HPA cpu at 120%", notes=hpa_class, scaleMetric="cpu", scaleMetricType="Utilization", scaleTarget=120)
    case("kserve: HPA memory at 10", notes=hpa_class, scaleMetric="memory", scaleTarget=10)
    case("kserve: autoscaler class test", notes={"serving.kserve.io/autoscalerClass": "test"}, scaleMetric="memory", scaleTarget=10)
    case("kserve: KEDA with scaleMetric", notes=keda_class, scaleMetric="cpu", scaleTarget=50)
    case("kserve: KEDA cpu by AverageValue", notes=keda_class, autoScaling=resource("cpu", {"type": "AverageValue", "averageValue": "1"}))
    case("kserve: KEDA cpu by Utilization", notes=keda_class, autoScaling=resource("cpu", {"type": "Utilization", "averageUtilization": 50}))
    case("kserve: minReplicas -1", minReplicas=-1, maxReplicas=3)
    case("kserve: maxReplicas -1", maxReplicas=-1)
    case("kserve: minReplicas 3 above maxReplicas 2", minReplicas=3, maxReplicas=2)
    case("kserve: deploymentStrategy in Knative mode", "Knative", scaleMetric="concurrency", deploymentStrategy={"type": "Recreate"})
    return cases


def test_kserve_and_ours_agree_on_inferenceservices(cluster: Cluster, need, servinggate: OurWebhook, namespace: str, record_property) -> None:
    need("kserve")
    agree: list[str] = []
    stricter: dict[str, str | None] = {}
    looser: dict[str, str | None] = {}
    for name, isvc in isvc_cases(namespace).items():
        theirs, mine = verdicts(cluster, servinggate, namespace, isvc)
        if theirs["allowed"] == mine["allowed"]:
            agree.append(name)
        elif mine["allowed"]:
            looser[name] = message(theirs)
        else:
            stricter[name] = message(mine)
    total = len(agree) + len(stricter) + len(looser)
    record_property("kserve_oracle", f"{len(agree)} agree of {total}; stricter {sorted(stricter)}; looser {sorted(looser)}")
    print(
        f"\nKServe oracle: {len(agree)} of {total} verdicts agree\n  ours stricter: {json.dumps(stricter, indent=2)}\n  KServe stricter: {json.dumps(looser, indent=2)}"
    )
    assert set(stricter) <= set(STRICTER_BY_DESIGN), stricter
    assert set(looser) <= set(LOOSER_BY_DESIGN), looser


def test_an_unknown_mode_word_kserve_admits_is_refused(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    """KServe's webhook admits an unknown deploymentMode word when the metric is a Knative one (its
    validator takes the Knative branch); its controller then deploys nothing ("unsupported deployment
    mode for workload"). It would never run: ours refuses it, naming the annotation. Shown with our
    webhook out of the way (the object created with KServe's webhook alone in the path), then ours."""
    need("kserve")
    isvc = guide_with(namespace, "Turbo", scaleMetric="rps")
    isvc["metadata"]["name"] = "turbo"
    theirs, mine = verdicts(cluster, servinggate, namespace, isvc)
    assert theirs["allowed"], theirs
    assert not mine["allowed"] and KSERVE_MODE in message(mine), mine
    status, body, _ = cluster.apply_custom(namespace, ISVC_GROUP, ISVC_VERSION, PLURAL, isvc)
    print(f"\nunknown mode word through the API server: {status} {body.get('message')}")
    assert status in (400, 403, 422) and KSERVE_MODE in str(body.get("message")), body
    alone = cluster.namespace("sg-e2e-kserve-alone", judged=False)  # outside our namespaceSelector
    try:
        isvc["metadata"]["namespace"] = alone
        status, body, _ = cluster.apply_custom(alone, ISVC_GROUP, ISVC_VERSION, PLURAL, isvc)
        assert status == 201, body
        failed = poll(
            lambda: next(
                (
                    c.get("message")
                    for c in (cluster.get_isvc(alone, "turbo").get("status") or {}).get("conditions") or []
                    if c["type"] == "PredictorReady" and c["status"] == "False" and c.get("message")
                ),
                None,
            ),
            60,
            "KServe's reconcile failing",
        )
        print(f"KServe's controller, with KServe alone: {failed}")
        assert "unsupported deployment mode" in failed, failed
        assert cluster.deployment(alone, "turbo-predictor") is None
    finally:
        cluster.delete_namespace(alone)
