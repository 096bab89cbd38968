"""Scenario 9, ACK's CronHPA beside us (kubernetes-cronhpa-controller, `autoscaling.alibabacloud.com/v1beta1`),
with our webhook judging every CronHPA write (the controller writes its status with a plain update of
the object: the CRD has no status subresource).

- The ACK guide's CronHPA on KServe's predictor Deployment `qwen-cronhpa-predictor`, its jobs a few
  seconds ahead (to 2, then back to 1): the controller scales the Deployment to 2 and back to 1, each
  job's condition is `Succeed`, and none of its writes is refused (beside KServe's HPA, which without a
  metrics server leaves a Deployment inside its bounds alone).
- The documented pairing, a CronHPA whose target is the HPA KServe made: the controller moves the HPA's
  minReplicas up to the job's size and scales the Deployment; KServe's controller then puts its own
  bounds back (it reconciles the HPA whenever the Deployment changes), so the Deployment stays where
  the job put it. Admitted throughout.
- A CronHPA on a ModelServing (Kthena's gang example): a job to 0 ServingGroups (every role below its
  gang minimum) is refused at apply; one within it makes the controller scale the ModelServing through
  `modelservings/scale`, and Kthena makes a whole second ServingGroup.
- An HPA and a CronHPA on one ModelServing: the second is refused with the one-owner message, and
  admitted with `servinggate.io/shared-scale-target: "true"`.
- The controller's schedule parser as an oracle: each schedule form sent to ours alone and given to
  the controller (in a namespace we do not judge): we never refuse one it runs."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
from kubernetes import watch
from kubernetes.client.rest import ApiException
from support.e2e import (
    CRONHPA_GROUP,
    CRONHPA_VERSION,
    Cluster,
    OurWebhook,
    Refusals,
    ask,
    create_request,
    cron_job,
    cronhpa,
    gang_example,
    guide_isvc,
    hpa_on,
    ms_target,
    ours,
    poll,
    running_ready,
    seconds_ahead,
)

PLURAL = "cronhorizontalpodautoscalers"
PREDICTOR = "qwen-cronhpa-predictor"
OUR_ENTRY = "cronhpa.validate.servinggate.io"  # our webhook's entry for CronHPAs
SHARED = "servinggate.io/shared-scale-target"
GROUP_LABEL = "modelserving.volcano.sh/group-name"


def apply_cronhpa(cluster: Cluster, ns: str, body: dict, dry_run: bool = False) -> tuple[int, dict, list[str]]:
    return cluster.apply_custom(ns, CRONHPA_GROUP, CRONHPA_VERSION, PLURAL, body, dry_run=dry_run)


def serve_the_guide(cluster: Cluster, ns: str) -> None:
    """The guide's InferenceService in Standard mode, its predictor at one running pod."""
    cluster.node(f"{ns}-n0", ns, npu=0)
    cluster.create_isvc(ns, guide_isvc(ns, "Standard"))
    poll(
        lambda: cluster.deployment_replicas(ns, PREDICTOR) == 1 and (ps := cluster.pods(ns)) and all(map(running_ready, ps)),
        120,
        "the predictor at 1 running pod",
    )
    poll(lambda: cluster.hpa(ns, PREDICTOR), 60, "KServe's HPA")


def test_the_guides_cronhpa_scales_the_predictor_to_2_and_back(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kserve", "cronhpa", "kwok", "kube-scheduler")
    serve_the_guide(cluster, namespace)
    counts = Refusals(cluster, servinggate, PLURAL, OUR_ENTRY)
    up, down = seconds_ahead(15), seconds_ahead(35)
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": PREDICTOR}
    status, body, warnings = apply_cronhpa(cluster, namespace, cronhpa("qwen-cronhpa", target, [cron_job("scale-up", up, 2), cron_job("scale-down", down, 1)]))
    assert status == 201, body
    submitted = poll(lambda: (c := cluster.cronhpa_conditions(namespace, "qwen-cronhpa")) and len(c) == 2 and c, 30, "the controller's Submitted conditions")
    assert {n: c["state"] for n, c in submitted.items()} == {"scale-up": "Submitted", "scale-down": "Submitted"}, submitted
    poll(lambda: cluster.deployment_replicas(namespace, PREDICTOR) == 2, 60, "the predictor scaled to 2")
    poll(lambda: len([p for p in cluster.pods(namespace) if running_ready(p)]) == 2, 60, "2 predictor pods running")
    poll(lambda: cluster.deployment_replicas(namespace, PREDICTOR) == 1, 60, "the predictor back to 1")
    done = poll(
        lambda: (c := cluster.cronhpa_conditions(namespace, "qwen-cronhpa")) and all(x["state"] == "Succeed" for x in c.values()) and c, 30, "both jobs Succeed"
    )
    assert done["scale-up"]["message"] == "cron hpa job scale-up executed successfully. current replicas:1, desired replicas:2.", done
    assert done["scale-down"]["message"] == "cron hpa job scale-down executed successfully. current replicas:2, desired replicas:1.", done
    seen = counts.since()
    assert seen["refused"] == 0 and seen["rejected"] == 0, seen  # nothing of the controller's refused
    assert seen["allowed"] >= 3, seen  # the create, and the controller's updates (Submitted, each job's result)
    hpa = cluster.hpa(namespace, PREDICTOR)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 10)  # KServe's HPA left as it was
    print(f"\nwarnings at apply: {warnings}")


@contextmanager
def watching_hpa(cluster: Cluster, ns: str, name: str) -> Iterator[list[dict]]:
    """Every version of the HPA the API server sends a watch while the block runs (KServe puts its
    bounds back within a second: polling could miss the CronHPA's)."""
    seen: list[dict] = []
    stop = threading.Event()
    w = watch.Watch()

    def run() -> None:
        while not stop.is_set():
            with contextlib.suppress(ApiException, OSError, urllib3.exceptions.HTTPError):  # w.stop() cuts the stream
                for event in w.stream(
                    cluster.custom.list_namespaced_custom_object,
                    "autoscaling",
                    "v2",
                    ns,
                    "horizontalpodautoscalers",
                    field_selector=f"metadata.name={name}",
                    timeout_seconds=180,
                ):
                    seen.append(event["object"])
                    if stop.is_set():
                        break

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        w.stop()
        thread.join(10)


def test_a_cronhpa_on_kserves_hpa_moves_its_bounds_and_is_admitted(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kserve", "cronhpa", "kwok", "kube-scheduler")
    serve_the_guide(cluster, namespace)
    poll(lambda: (cluster.hpa(namespace, PREDICTOR).get("status") or {}).get("currentReplicas") == 1, 60, "the HPA's status at 1 replica")
    counts = Refusals(cluster, servinggate, PLURAL, OUR_ENTRY)
    target = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "name": PREDICTOR}
    with watching_hpa(cluster, namespace, PREDICTOR) as seen:
        status, body, _ = apply_cronhpa(cluster, namespace, cronhpa("qwen-cronhpa-hpa", target, [cron_job("scale-up", seconds_ahead(15), 3)]))
        assert status == 201, body
        poll(lambda: cluster.deployment_replicas(namespace, PREDICTOR) == 3, 60, "the predictor scaled to 3")
        done = poll(
            lambda: (c := cluster.cronhpa_conditions(namespace, "qwen-cronhpa-hpa").get("scale-up")) and c["state"] == "Succeed" and c, 30, "the job Succeed"
        )
        poll(lambda: cluster.hpa(namespace, PREDICTOR)["spec"]["minReplicas"] == 1, 60, "KServe's bounds back")
        time.sleep(2)
    mins = [h["spec"]["minReplicas"] for h in seen]
    print(f"\nthe HPA's minReplicas as watched: {mins}; the job: {done['message']}")
    assert 3 in mins, mins  # the CronHPA controller moved KServe's HPA (ScaleHPA: below the size, minReplicas = size)
    assert mins[-1] == 1, mins  # and KServe's controller put its own back
    # "current replicas:1, desired replicas:3." or, when the HPA controller had already acted on the
    # moved bounds by the time the job read the HPA's status, "Skip scale replicas because HPA ...
    # current replicas:3 >= desired replicas:3." (both seen on the stack)
    assert done["message"].startswith("cron hpa job scale-up executed successfully.") and "desired replicas:3" in done["message"], done
    assert cluster.deployment_replicas(namespace, PREDICTOR) == 3  # no metrics server: the HPA leaves it inside its bounds
    seen = counts.since()
    assert seen["refused"] == 0 and seen["rejected"] == 0, seen


# ---- a CronHPA on a ModelServing ------------------------------------------------------------------


def groups(cluster: Cluster, ns: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for pod in cluster.pods(ns, "modelserving.volcano.sh/name=sample"):
        if pod.metadata.deletion_timestamp is None:
            out.setdefault(pod.metadata.labels[GROUP_LABEL], []).append(pod)
    return out


def gang_running(cluster: Cluster, ns: str) -> None:
    """Kthena's gang example (8 pods of 1 NPU a ServingGroup) on two 8-NPU nodes of the test's, sample-0 running."""
    for i in range(2):
        cluster.node(f"{ns}-n{i}", ns, npu=8)
    cluster.create_ms(ns, gang_example(ns, npu=1))
    poll(lambda: (g := groups(cluster, ns)) and len(g.get("sample-0", [])) == 8 and all(map(running_ready, g["sample-0"])), 180, "sample-0 running")


def test_a_cronhpa_job_the_scale_would_refuse_is_refused_at_apply(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    """A job on a ModelServing scales it through modelservings/scale when it runs, and our scale rule
    judges that write; a size it would refuse is refused at apply instead, naming the job's targetSize.
    At 2 ServingGroups a 50% maxUnavailable is 1; at 1 it rounds down to 0 and, with no maxSurge,
    Kthena's rolling update could never move. A job to 0 groups is admitted: Kthena scales 1 -> 0 -> 1
    whole (seen on the stack), and scaling to zero is the CronHPA's business, not a gang's."""
    need("kthena", "cronhpa")
    ms = gang_example(namespace, npu=1)
    ms["spec"]["schedulerName"] = "servinggate-e2e-none"  # no pod needs to run
    ms["spec"]["replicas"] = 2
    ms["spec"]["rolloutStrategy"] = {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": "50%"}}
    cluster.create_ms(namespace, ms)
    status, body, _ = apply_cronhpa(cluster, namespace, cronhpa("down", ms_target(), [cron_job("night", "0 0 2 * * *", 1)]))
    print(f"\na job to 1 ServingGroup at maxUnavailable 50%: {status} {body.get('message')}")
    assert status in (400, 403, 422), body
    assert "spec.jobs[0].targetSize" in str(body.get("message")) and "maxUnavailable and maxSurge cannot both resolve to 0" in str(body.get("message")), body
    status, body, _ = apply_cronhpa(cluster, namespace, cronhpa("off", ms_target(), [cron_job("night", "0 0 2 * * *", 0)]))
    assert status == 201, body


def test_a_cronhpa_on_a_modelserving_scales_whole_serving_groups(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena", "volcano-controllers", "volcano-scheduler", "kwok", "cronhpa")
    gang_running(cluster, namespace)
    counts = Refusals(cluster, servinggate, PLURAL, OUR_ENTRY)
    scales = Refusals(cluster, servinggate, "modelservings/scale", "modelservings.validate.servinggate.io")
    status, body, _ = apply_cronhpa(cluster, namespace, cronhpa("sample-cron", ms_target(), [cron_job("up", seconds_ahead(15), 2)]))
    assert status == 201, body
    poll(lambda: cluster.get_ms(namespace, "sample")["spec"]["replicas"] == 2, 60, "the ModelServing scaled to 2")
    both = poll(
        lambda: (g := groups(cluster, namespace)) and len(g) == 2 and all(len(ps) == 8 and all(map(running_ready, ps)) for ps in g.values()) and g,
        180,
        "two whole groups",
    )
    assert sorted(both) == ["sample-0", "sample-1"]
    done = poll(lambda: (c := cluster.cronhpa_conditions(namespace, "sample-cron").get("up")) and c["state"] == "Succeed" and c, 30, "the job Succeed")
    assert done["message"] == "cron hpa job up executed successfully. current replicas:1, desired replicas:2.", done
    seen, scaled = counts.since(), scales.since()
    assert seen["refused"] == 0 and seen["rejected"] == 0, seen
    assert scaled["allowed"] >= 1 and scaled["refused"] == 0 and scaled["rejected"] == 0, scaled  # modelservings/scale, through us


def test_an_hpa_and_a_cronhpa_on_one_modelserving_need_the_annotation(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kthena", "cronhpa")
    ms = gang_example(namespace, npu=1)
    ms["spec"]["schedulerName"] = "servinggate-e2e-none"  # no pod needs to run
    cluster.create_ms(namespace, ms)
    status, body, _ = cluster.raw("POST", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers", hpa_on("sample-hpa", "sample"))
    assert status == 201, body
    cron = cronhpa("sample-cron", ms_target(), [cron_job("night", "0 0 2 * * *", 1)])
    # our webhook reads the autoscalers from a watch: refused once it has seen the HPA
    refused = poll(lambda: (r := apply_cronhpa(cluster, namespace, cron, dry_run=True))[0] >= 400 and r, 30, "the one-owner refusal")
    said = str(refused[1].get("message"))
    print(f"\nthe second autoscaler: {said}")
    assert f"ModelServing {namespace}/sample is already scaled by HorizontalPodAutoscaler {namespace}/sample-hpa" in said, said
    assert "two autoscalers would fight over its replicas" in said and SHARED in said, said
    assert "spec.scaleTargetRef.name" in said, said
    shared = cronhpa("sample-cron", ms_target(), [cron_job("night", "0 0 2 * * *", 1)], annotations={SHARED: "true"})
    status, body, warnings = apply_cronhpa(cluster, namespace, shared)
    assert status == 201, (body, warnings)
    # the controller's own update of it (its Submitted condition) is admitted too
    poll(lambda: cluster.cronhpa_conditions(namespace, "sample-cron").get("night", {}).get("state") == "Submitted", 30, "the controller's Submitted condition")


# ---- the controller's schedule parser as an oracle --------------------------------------------

# schedule -> whether kubernetes-cronhpa-controller 31c63bed (ringtail/go-cron) runs it, as seen on the stack
SCHEDULES = {
    "0 30 10 * * *": True,  # the guide's
    "0 0 12 * * *": True,
    "0 30 10 * *": True,  # five fields: the day of week is optional
    "? 30 10 * * *": True,  # '?' in any field
    "0 30 10 ? * *": True,
    "0 0 0 * JAN MON": True,
    "@daily": True,
    "@every 1h": True,
    "@date 2030-01-01 10:00:00": True,  # ringtail/go-cron's own descriptor (runs once)
    "0 30 10 *": False,
    "0 30 10 * * * *": False,
    "61 * * * * *": False,
    "*/0 * * * * *": False,
    "@fortnightly": False,
    "CRON_TZ=Asia/Shanghai 0 30 10 * * *": False,
}


def test_we_never_refuse_a_schedule_the_controller_runs(cluster: Cluster, need, servinggate: OurWebhook, record_property) -> None:
    need("cronhpa")
    ns = cluster.namespace("sg-cron-oracle", judged=False)  # the controller's own verdicts, without ours in the way
    try:
        jobs = [cron_job(f"j{i}", schedule, 0) for i, schedule in enumerate(SCHEDULES)]
        body = cronhpa("forms", {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nothing"}, jobs)
        cluster.create_cronhpa(ns, body)
        states = poll(lambda: (c := cluster.cronhpa_conditions(ns, "forms")) and len(c) == len(jobs) and c, 30, "a condition per job")
        mine = {}
        for schedule in SCHEDULES:
            one = cronhpa("one", body["spec"]["scaleTargetRef"], [cron_job("j", schedule, 0)])
            answer = ask(*ours(servinggate), create_request(ns, one, CRONHPA_GROUP, CRONHPA_VERSION, "CronHorizontalPodAutoscaler", PLURAL))
            mine[schedule] = (answer["allowed"], (answer.get("status") or {}).get("message"))
        runs = {schedule: states[f"j{i}"]["state"] == "Submitted" for i, schedule in enumerate(SCHEDULES)}
    finally:
        cluster.delete_namespace(ns)
    print("\nschedule: the controller runs it / ours admits it")
    for schedule in SCHEDULES:
        print(f"  {schedule!r}: {runs[schedule]} / {mine[schedule][0]}  {mine[schedule][1] or ''}")
    assert runs == SCHEDULES, runs  # the controller as recorded
    stricter = [s for s in SCHEDULES if runs[s] and not mine[s][0]]
    looser = [s for s in SCHEDULES if not runs[s] and mine[s][0]]
    record_property("cron_oracle", f"stricter {stricter}; looser {looser}")
    assert stricter == [], stricter
    assert looser == [], looser
