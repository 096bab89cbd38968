"""Faults beside KServe and the CronHPA controller (issue 47, "Bad input and faults").

- *The CronHPA controller restarted between two jobs*: the ACK guide's CronHPA on KServe's predictor
  Deployment, a job to 2 and a job back to 1 some 30 s apart; the controller is restarted once the
  first has run (`SERVINGGATE_E2E_RESTART_CRONHPA`; unset, the test skips and names it). Its jobs live
  in memory: the new controller re-adds them from the CronHPA, writing every job's condition back to
  `Submitted` (the first job's `Succeed` and its message are overwritten), and the second job runs on
  time: the Deployment returns to 1 and its condition says so. Every write of the controller's goes
  through our webhook (the CRD has no status subresource) and none is refused.
- *Our webhook down while CronHPA jobs run*: a job on a ModelServing and one on a Deployment due
  during the outage. The Deployment is scaled (not in our scope); `modelservings/scale` is refused at
  each of the job's retries (every 3 s for 10 s) and the job fails; each job's result, a patch of the
  CronHPA, is refused three times on end and the controller gives up with a Warning event
  (`Failed to update cronhpa status: ...`), the conditions left at `Submitted`. Nothing runs the lost
  job again: the ModelServing stays at its size until its next job, which runs once we are back.
- *Our webhook down while KServe reconciles*: the guide's InferenceService Ready, and a second one;
  our webhook stopped, its configurations left in place (the InferenceService entry fails closed).
  The user's change to the predictor's bounds is refused (the API server cannot call us); KServe's
  reconcile of what it owns goes on (its HPA and Deployment, deleted by hand, are made again while we
  are down: neither is in our scope), and it writes nothing to the InferenceService itself. Deleting
  the second InferenceService is admitted (DELETE is not in our scope), and so is the one write KServe
  makes to the object itself then, the merge patch that removes its finalizer: our entry's
  `not-being-deleted` condition keeps updates of an object being deleted from us, so the API server
  never calls us for it and the InferenceService goes, with everything it owned, while we are down.
  Once we are back the change applied again is admitted, KServe moves its HPA and the HPA controller
  the Deployment, and the InferenceService is Ready with exactly one Deployment and one HPA, both as
  it says.

KServe aaac4e29 writes the InferenceService object itself only to add its finalizer
(`inferenceservice.finalizers`, on the first reconcile after a create) and to remove it (on delete),
each a merge patch of `metadata.finalizers`; everything else is `/status`, which our entry does not
select (pkg/controller/v1beta1/inferenceservice/controller.go)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes.client.rest import ApiException
from support.e2e import (
    CRONHPA_GROUP,
    CRONHPA_VERSION,
    ISVC_GROUP,
    ISVC_VERSION,
    MS_GROUP,
    MS_VERSION,
    NODE_OWNER,
    RESTART_ENV,
    Cluster,
    OurWebhook,
    Refusals,
    cron_job,
    cronhpa,
    gang_example,
    guide_isvc,
    poll,
    restart,
    restart_command,
    running_ready,
    seconds_ahead,
    stopped,
)

ISVC = "qwen-cronhpa"
PREDICTOR = f"{ISVC}-predictor"
RETIRED = "qwen-retired"  # the InferenceService deleted during the outage
FINALIZER = "inferenceservice.finalizers"  # KServe's
ISVC_PLURAL, ISVC_ENTRY = "inferenceservices", "kserve.validate.servinggate.io"
CRON_PLURAL, CRON_ENTRY = "cronhorizontalpodautoscalers", "cronhpa.validate.servinggate.io"


def running(cluster: Cluster, ns: str) -> list:
    return [p for p in cluster.pods(ns) if running_ready(p)]


def serve(cluster: Cluster, ns: str, *names: str) -> None:
    """The guide's InferenceService(s) in Standard mode on a node of the test's, each Ready with its
    predictor at one running pod, KServe's HPA and finalizer."""
    cluster.node(f"{ns}-n0", ns, npu=0)
    for name in names:
        cluster.create_isvc(ns, guide_isvc(ns, "Standard", name=name))
    for name in names:
        poll(lambda n=name: cluster.isvc_conditions(ns, n).get("Ready") == "True", 120, f"{name} Ready")
        poll(lambda n=name: cluster.hpa(ns, f"{n}-predictor"), 60, f"KServe's HPA of {name}")
        assert FINALIZER in (cluster.get_isvc(ns, name)["metadata"].get("finalizers") or [])
    poll(lambda: len(running(cluster, ns)) == len(names), 60, f"{len(names)} predictor pod(s) running")


# ---- the CronHPA controller restarted between two jobs ----------------------------------------------


@pytest.mark.cluster_to_itself  # every CronHPA of the cluster loses its controller for the restart
def test_the_cronhpa_controller_restarted_between_two_jobs_still_runs_the_second(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kserve", "cronhpa", "kwok", "kube-scheduler")
    command = restart_command("cronhpa")
    if command is None:
        pytest.skip(f"{RESTART_ENV['cronhpa']} is not set: no command to restart the CronHPA controller (docs/e2e.md)")
    serve(cluster, namespace, ISVC)
    counts = Refusals(cluster, servinggate, CRON_PLURAL, CRON_ENTRY)
    down_at = time.time() + 45
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": PREDICTOR}
    jobs = [cron_job("scale-up", seconds_ahead(15), 2), cron_job("scale-down", seconds_ahead(45), 1)]
    status, body, _ = cluster.apply_custom(namespace, CRONHPA_GROUP, CRONHPA_VERSION, CRON_PLURAL, cronhpa(ISVC, target, jobs))
    assert status == 201, body

    def states() -> dict[str, str]:
        return {n: c["state"] for n, c in cluster.cronhpa_conditions(namespace, ISVC).items()}

    poll(lambda: states() == {"scale-up": "Submitted", "scale-down": "Submitted"}, 30, "the controller's Submitted conditions")

    poll(lambda: cluster.deployment_replicas(namespace, PREDICTOR) == 2, 60, "the first job scaling the predictor to 2")
    first = poll(lambda: (c := cluster.cronhpa_conditions(namespace, ISVC)["scale-up"]) and c["state"] == "Succeed" and c, 30, "the first job Succeed")
    assert first["message"] == "cron hpa job scale-up executed successfully. current replicas:1, desired replicas:2.", first
    poll(lambda: len(running(cluster, namespace)) == 2, 60, "2 predictor pods running")

    took = restart(command)
    restarted_at = time.time()
    assert restarted_at < down_at - 5, f"the restart ended {down_at - restarted_at:.1f}s before the second job: too late to tell"
    # the jobs live in the controller's memory: the new one re-adds both from the CronHPA and writes
    # each job's condition back to Submitted, the first's Succeed (and its message) overwritten
    again = poll(
        lambda: states() == {"scale-up": "Submitted", "scale-down": "Submitted"} and cluster.cronhpa_conditions(namespace, ISVC), 30, "both jobs re-Submitted"
    )
    print(f"\nrestart command {took:.1f}s; the first job's condition after the restart: {again['scale-up']}")
    assert again["scale-up"].get("message", "") == "", again

    poll(lambda: cluster.deployment_replicas(namespace, PREDICTOR) == 1, 60, "the second job scaling the predictor back to 1")
    second = poll(lambda: (c := cluster.cronhpa_conditions(namespace, ISVC)["scale-down"]) and c["state"] == "Succeed" and c, 30, "the second job Succeed")
    assert second["message"] == "cron hpa job scale-down executed successfully. current replicas:2, desired replicas:1.", second
    poll(lambda: len(running(cluster, namespace)) == 1, 60, "1 predictor pod running")
    said = events_of(cluster, namespace, ISVC)
    print(f"the CronHPA's events: {said}")
    assert ("Normal", "Succeed", second["message"]) in said, said
    assert ("Normal", "Succeed", first["message"]) in said, said  # the first job's result survives in its event only
    assert [e for e in said if e[0] == "Warning"] == [], said

    seen = counts.since()
    print(f"our CronHPA entry: {seen}")
    assert seen["refused"] == 0 and seen["rejected"] == 0, seen
    # the create, Submitted, the first job's result, the new controller's re-Submitted, the second's result
    assert seen["allowed"] >= 5, seen
    hpa = cluster.hpa(namespace, PREDICTOR)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 10)  # KServe's HPA left as it was


# ---- our webhook down while CronHPA jobs run --------------------------------------------------------

MS_ENTRY = "modelservings.validate.servinggate.io"  # judges modelservings/scale too


def refused_calls(cluster: Cluster, entry: str) -> float:
    """UPDATEs through `entry` the API server refused because it could not call us."""
    return cluster.apiserver_metric("apiserver_admission_webhook_rejection_count", name=entry, operation="UPDATE", error_type="calling_webhook_error")


def events_of(cluster: Cluster, ns: str, name: str) -> list[tuple[str, str, str]]:
    """The CronHPA's events as (type, reason, message), sorted."""
    return sorted((e.type, e.reason, e.message) for e in cluster.events_about(ns, "CronHorizontalPodAutoscaler", name))


def test_cronhpa_jobs_that_run_while_we_are_down(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    """A job on a ModelServing and one on a Deployment, both due while our webhook is down (for longer
    than the 10 s a job retries its scale). The Deployment's scale is not in our scope: it is scaled.
    The ModelServing's (`modelservings/scale`) is refused at each retry, and the job fails. Each job's
    result is a patch of the CronHPA, refused three times on end: the controller gives up with a
    Warning event, and the conditions keep saying `Submitted`. Nothing runs the lost job again; once
    we are back the ModelServing's next job scales it and records its result."""
    need("kthena", "cronhpa")
    ms = gang_example(namespace, npu=1)
    ms["spec"]["schedulerName"] = "servinggate-e2e-none"  # no pod needs to run
    cluster.create_ms(namespace, ms)
    web = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"nodeSelector": {NODE_OWNER: "servinggate-e2e-nowhere"}, "containers": [{"name": "c", "image": "registry.example/web:1"}]},
            },
        },
    }
    cluster.apps.create_namespaced_deployment(namespace, web)
    t0 = time.time()
    due, next_due = seconds_ahead(20), seconds_ahead(60)
    ms_ref = {"apiVersion": f"{MS_GROUP}/{MS_VERSION}", "kind": "ModelServing", "name": "sample"}
    for body in (
        cronhpa("ms-cron", ms_ref, [cron_job("during", due, 2), cron_job("after", next_due, 2)]),
        cronhpa("web-cron", {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, [cron_job("during", due, 2)]),
    ):
        status, said, _ = cluster.apply_custom(namespace, CRONHPA_GROUP, CRONHPA_VERSION, CRON_PLURAL, body)
        assert status == 201, said
    for name, jobs in (("ms-cron", 2), ("web-cron", 1)):
        poll(lambda n=name, j=jobs: [c["state"] for c in cluster.cronhpa_conditions(namespace, n).values()] == ["Submitted"] * j, 30, f"{name} Submitted")
    scales, writes = refused_calls(cluster, MS_ENTRY), refused_calls(cluster, CRON_ENTRY)
    with stopped(servinggate):
        assert time.time() < t0 + 17, f"our webhook went down {time.time() - t0:.0f}s after the jobs were made: after they were due"
        # the jobs' time, their 10 s of retries, and the controller giving up on each result (its event)
        poll(lambda: all(events_of(cluster, namespace, n) for n in ("ms-cron", "web-cron")), 60, "the controller giving up on both jobs' results")
        during = {"modelserving": cluster.get_ms(namespace, "sample")["spec"]["replicas"], "deployment": cluster.deployment_replicas(namespace, "web")}
        refused = {"modelservings/scale": refused_calls(cluster, MS_ENTRY) - scales, "cronhpa status": refused_calls(cluster, CRON_ENTRY) - writes}
    back = Refusals(cluster, servinggate, CRON_PLURAL, CRON_ENTRY), Refusals(cluster, servinggate, "modelservings/scale", MS_ENTRY)
    assert time.time() < t0 + 55, f"back {time.time() - t0:.0f}s after the jobs were made: the next job may have met the outage"
    print(f"\nwhile we were down: {during}; refused calls {refused}")
    said = {name: events_of(cluster, namespace, name) for name in ("ms-cron", "web-cron")}
    print(f"events: {said}")
    assert during == {"modelserving": 1, "deployment": 2}, during  # a Deployment's scale is not in our scope
    assert refused["modelservings/scale"] >= 3, refused  # the job retried its scale (every 3 s for 10 s)
    assert refused["cronhpa status"] >= 6, refused  # each job's result: three patches on end, each refused
    for name in ("ms-cron", "web-cron"):
        [(kind, reason, message)] = said[name]
        assert (kind, reason) == ("Warning", "Failed"), said
        assert message.startswith("Failed to update cronhpa status: ") and f'failed calling webhook "{CRON_ENTRY}"' in message, message
    # the status never learnt what ran: the Deployment's job and the ModelServing's both still Submitted
    assert cluster.cronhpa_conditions(namespace, "web-cron")["during"]["state"] == "Submitted"
    assert cluster.get_ms(namespace, "sample")["spec"]["replicas"] == 1  # nothing runs the failed job again

    # the ModelServing's next job, once we are back: scaled through us, its result recorded
    poll(lambda: cluster.get_ms(namespace, "sample")["spec"]["replicas"] == 2, 60, "the next job scaling the ModelServing to 2")
    after = poll(lambda: (c := cluster.cronhpa_conditions(namespace, "ms-cron"))["after"]["state"] == "Succeed" and c, 30, "the next job Succeed")
    assert after["after"]["message"] == "cron hpa job after executed successfully. current replicas:1, desired replicas:2.", after
    assert after["during"]["state"] == "Submitted", after  # the lost job's failure is in no status
    for counts in back:
        seen = counts.since()
        assert seen["refused"] == 0 and seen["rejected"] == 0, seen
        assert seen["allowed"] >= 1, seen


# ---- our webhook down while KServe reconciles ------------------------------------------------------

CHANGE = {"spec": {"predictor": {"minReplicas": 2, "maxReplicas": 5}}}


def api_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message"))
    except (TypeError, ValueError):
        return str(exc.reason)


def owned(cluster: Cluster, ns: str) -> dict[str, list[str]]:
    """What KServe made in the namespace, by kind: Deployments, HPAs, Services, Ingresses."""
    hpas = cluster.raw("GET", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers")[1]
    ingresses = cluster.raw("GET", f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses")[1]
    return {
        "deployments": sorted(d.metadata.name for d in cluster.apps.list_namespaced_deployment(ns).items),
        "hpas": sorted(h["metadata"]["name"] for h in hpas.get("items") or []),
        "services": sorted(s.metadata.name for s in cluster.core.list_namespaced_service(ns).items),
        "ingresses": sorted(i["metadata"]["name"] for i in ingresses.get("items") or []),
    }


def gone(cluster: Cluster, ns: str, name: str) -> bool:
    try:
        cluster.get_isvc(ns, name)
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def remade(cluster: Cluster, ns: str, before: dict[str, str]) -> dict[str, Any] | None:
    """KServe's Deployment and HPA of the predictor once both are new objects (uids not in `before`),
    the Deployment's pod running and the InferenceService Ready; else None."""
    d, h = cluster.deployment(ns, PREDICTOR), cluster.hpa(ns, PREDICTOR)
    if d is None or h is None or d.metadata.uid == before["deployment"] or h["metadata"]["uid"] == before["hpa"]:
        return None
    if (d.status.ready_replicas or 0) != 1 or cluster.isvc_conditions(ns, ISVC).get("Ready") != "True":
        return None
    return {"deployment": d, "hpa": h}


def test_kserve_converges_once_we_are_back_from_an_outage(cluster: Cluster, need, servinggate: OurWebhook, namespace: str) -> None:
    need("kserve", "kwok", "kube-scheduler")
    serve(cluster, namespace, ISVC, RETIRED)
    [config] = [n for k, n in servinggate.names if k == "validating"]
    assert any(h.name == ISVC_ENTRY and h.failure_policy == "Fail" for h in cluster.admission.read_validating_webhook_configuration(config).webhooks)
    before = {"deployment": cluster.deployment(namespace, PREDICTOR).metadata.uid, "hpa": cluster.hpa(namespace, PREDICTOR)["metadata"]["uid"]}
    base = refused_calls(cluster, ISVC_ENTRY)
    with stopped(servinggate):
        # the user's change: refused, the API server cannot call our entry
        with pytest.raises(ApiException) as refused:
            cluster.patch_isvc(namespace, ISVC, CHANGE)
        said = api_message(refused.value)
        print(f"\nthe user's change while we are down: {refused.value.status} {said}")
        assert refused.value.status == 500 and f'failed calling webhook "{ISVC_ENTRY}"' in said, said
        predictor = cluster.get_isvc(namespace, ISVC)["spec"]["predictor"]
        assert (predictor["minReplicas"], predictor["maxReplicas"]) == (1, 10), predictor
        after_user = refused_calls(cluster, ISVC_ENTRY)
        assert after_user > base, (base, after_user)

        # KServe's reconcile of what it owns goes on: its HPA, then its Deployment (which it watches), deleted
        cluster.raw("DELETE", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{PREDICTOR}")
        cluster.apps.delete_namespaced_deployment(PREDICTOR, namespace)
        again = poll(lambda: remade(cluster, namespace, before), 120, "KServe making its Deployment and HPA again while we are down")
        assert (again["hpa"]["spec"]["minReplicas"], again["hpa"]["spec"]["maxReplicas"]) == (1, 10), again["hpa"]["spec"]
        assert refused_calls(cluster, ISVC_ENTRY) == after_user  # KServe wrote nothing to the InferenceService itself

        # KServe's own write to the object: the finalizer it removes once RETIRED is deleted. The
        # API server does not call us for it (not-being-deleted), so RETIRED goes while we are down,
        # and the garbage collector takes what it owned.
        deleted = time.monotonic()
        cluster.custom.delete_namespaced_custom_object(ISVC_GROUP, ISVC_VERSION, namespace, ISVC_PLURAL, RETIRED)
        poll(lambda: gone(cluster, namespace, RETIRED), 60, f"{RETIRED} gone while we are down")
        retired_after = time.monotonic() - deleted
        mine = {"deployments": [PREDICTOR], "hpas": [PREDICTOR], "services": [PREDICTOR], "ingresses": [ISVC]}
        poll(lambda: owned(cluster, namespace) == mine, 60, f"nothing of {RETIRED} left while we are down")
        assert refused_calls(cluster, ISVC_ENTRY) == after_user  # our entry was never called for it
    print(f"{RETIRED} gone {retired_after:.1f}s after its delete, while we were down")
    counts = Refusals(cluster, servinggate, ISVC_PLURAL, ISVC_ENTRY)  # our counters start again with the webhook

    # the change, applied again: admitted; KServe moves its HPA, the HPA controller the Deployment
    cluster.patch_isvc(namespace, ISVC, CHANGE)
    hpa = poll(lambda: (h := cluster.hpa(namespace, PREDICTOR)) and h["spec"]["minReplicas"] == 2 and h, 60, "KServe's HPA at the new bounds")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5), hpa["spec"]
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 10}}}]
    poll(lambda: cluster.deployment_replicas(namespace, PREDICTOR) == 2 and len(running(cluster, namespace)) == 2, 120, "the predictor at 2 running pods")
    poll(lambda: cluster.isvc_conditions(namespace, ISVC).get("Ready") == "True", 60, "the InferenceService Ready")
    assert owned(cluster, namespace) == mine, owned(cluster, namespace)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": PREDICTOR}
    seen = counts.since()
    print(f"our InferenceService entry once back: {seen}")
    assert seen["refused"] == 0 and seen["rejected"] == 0, seen
    assert seen["allowed"] >= 1, seen  # the user's change
