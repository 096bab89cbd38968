"""What tests/e2e shares: the cluster named by SERVINGGATE_E2E_KUBECONFIG, the probes that tell
whether Kthena, Volcano and KWOK answer there, our own webhook and reconciler started from this
checkout, and builders for the objects the scenarios apply.

Nothing here builds or installs Kthena, Volcano or KWOK: the tests find them through the
kubeconfig, as on any cluster where they are installed from their Helm charts (docs/e2e.md).
Every object a test makes lives in its own namespace, or carries the label `servinggate-e2e`
(nodes, webhook configurations), and is deleted when the test ends."""

from __future__ import annotations

import abc
import base64
import contextlib
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from support import REPO, free_port, processes, wait_for

ENV = "SERVINGGATE_E2E_KUBECONFIG"
# a shell command that restarts the component and returns once it was started again (docs/e2e.md)
RESTART_ENV = {"kthena": "SERVINGGATE_E2E_RESTART_KTHENA", "apiserver": "SERVINGGATE_E2E_RESTART_APISERVER", "cronhpa": "SERVINGGATE_E2E_RESTART_CRONHPA"}
HOLD = "servinggate-e2e/hold"  # a finalizer the tests put on pods to keep them terminating
E2E_LABEL = "servinggate-e2e"  # on namespaces our webhook judges, on the nodes a test made
NODE_OWNER = "servinggate-e2e/namespace"  # node label: the test namespace whose pods may land there
# One pytest run (its xdist workers share PYTEST_XDIST_TESTRUNUID) and one process of it: our
# configurations carry the run, so a run removes only an earlier run's leftovers, never a live
# worker's; each worker's webhook judges only the namespaces its own tests made (JUDGE).
RUN_LABEL, JUDGE_LABEL = "servinggate-e2e/run", "servinggate-e2e/judge"
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
JUDGE = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{RUN[:12]}"
NPU = "huawei.com/Ascend910"
GPU = "nvidia.com/gpu"
MS_GROUP, MS_VERSION = "workload.serving.volcano.sh", "v1alpha1"
PG_GROUP, PG_VERSION = "scheduling.volcano.sh", "v1beta1"
ISVC_GROUP, ISVC_VERSION = "serving.kserve.io", "v1beta1"
CRONHPA_GROUP, CRONHPA_VERSION = "autoscaling.alibabacloud.com", "v1beta1"
KSERVE_MODE = "serving.kserve.io/deploymentMode"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
COST = "controller.kubernetes.io/pod-deletion-cost"


class Cluster:
    """The API clients for one kubeconfig, and the few calls every scenario makes."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.api = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.ext = client.ApiextensionsV1Api(self.api)
        self.admission = client.AdmissionregistrationV1Api(self.api)
        self.coordination = client.CoordinationV1Api(self.api)

    # ---- ModelServings and PodGroups ----
    def create_ms(self, ns: str, body: dict) -> dict:
        return self.custom.create_namespaced_custom_object(MS_GROUP, MS_VERSION, ns, "modelservings", body)

    def raw(self, method: str, path: str, body: Any = None, ctype: str = "application/json", query: list | None = None) -> tuple[int, dict, list[str]]:
        """One request as kubectl makes it: (status, decoded body, the text of each Warning header)."""

        m, url, headers, data, post = self.api.param_serialize(
            method, path, query_params=query, body=body, header_params={"Content-Type": ctype, "Accept": "application/json"}, auth_settings=["BearerToken"]
        )
        resp = self.api.call_api(m, url, header_params=headers, body=data, post_params=post, _request_timeout=60)
        resp.read()
        return int(resp.status), json.loads(resp.data or b"{}"), _warnings(resp.headers)

    # ---- KServe InferenceServices, CronHPAs, and what they scale ----
    def create_isvc(self, ns: str, body: dict) -> dict:
        return self.custom.create_namespaced_custom_object(ISVC_GROUP, ISVC_VERSION, ns, "inferenceservices", body)

    def get_isvc(self, ns: str, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(ISVC_GROUP, ISVC_VERSION, ns, "inferenceservices", name)

    def patch_isvc(self, ns: str, name: str, patch: Any) -> dict:
        return self._patch(f"/apis/{ISVC_GROUP}/{ISVC_VERSION}/namespaces/{ns}/inferenceservices/{name}", patch, "merge")

    def create_cronhpa(self, ns: str, body: dict) -> dict:
        return self.custom.create_namespaced_custom_object(CRONHPA_GROUP, CRONHPA_VERSION, ns, "cronhorizontalpodautoscalers", body)

    def get_cronhpa(self, ns: str, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(CRONHPA_GROUP, CRONHPA_VERSION, ns, "cronhorizontalpodautoscalers", name)

    def isvc_conditions(self, ns: str, name: str) -> dict[str, str]:
        """The InferenceService's status conditions: type -> "True"/"False"/"Unknown"."""
        status = self.get_isvc(ns, name).get("status") or {}
        return {c["type"]: c["status"] for c in status.get("conditions") or []}

    def cronhpa_conditions(self, ns: str, name: str) -> dict[str, dict]:
        """The CronHPA's job conditions (its controller's status) by job name."""
        return {c["name"]: c for c in (self.get_cronhpa(ns, name).get("status") or {}).get("conditions") or []}

    def apply_custom(self, ns: str, group: str, version: str, plural: str, body: dict, dry_run: bool = False) -> tuple[int, dict, list[str]]:
        """Create a custom object as `kubectl apply` would and keep what kubectl prints: (status, body, warnings)."""
        query = [("dryRun", "All")] if dry_run else None
        return self.raw("POST", f"/apis/{group}/{version}/namespaces/{ns}/{plural}", body, query=query)

    def deployment(self, ns: str, name: str) -> client.V1Deployment | None:
        try:
            return self.apps.read_namespaced_deployment(name, ns)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def deployment_replicas(self, ns: str, name: str) -> int:
        """The Deployment's spec.replicas, -1 while it does not exist."""
        d = self.deployment(ns, name)
        return -1 if d is None else int(d.spec.replicas)

    def hpa(self, ns: str, name: str) -> dict | None:
        """An HPA as autoscaling/v2 serves it, or None."""
        status, body, _ = self.raw("GET", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{name}")
        if status == 404:
            return None
        assert status == 200, body
        return body

    def events_about(self, ns: str, kind: str, name: str) -> list[Any]:
        """The events (core/v1) whose involved object is the `kind` named `name`."""
        return self.core.list_namespaced_event(ns, field_selector=f"involvedObject.kind={kind},involvedObject.name={name}").items

    def hpa_conditions(self, ns: str, name: str) -> dict[str, dict]:
        """The HPA's status conditions (its controller's) by type."""
        return {c["type"]: c for c in ((self.hpa(ns, name) or {}).get("status") or {}).get("conditions") or []}

    # ---- our MutatingAdmissionPolicy ----
    def mutating_policy_version(self) -> str | None:
        """The MutatingAdmissionPolicy version the API server serves (v1 first), or None."""
        from webhook.deploy.mutationpolicy import API_VERSIONS, GROUP

        for version in API_VERSIONS:
            status, found, _ = self.raw("GET", f"/apis/{GROUP}/{version}")
            if status == 200 and any(r.get("name") == "mutatingadmissionpolicies" for r in found.get("resources") or []):
                return version
        return None

    def no_mutating_policy(self) -> str:
        """Why `mutating_policy_version` found none, said for the API server's minor (GET /version)."""
        from webhook.deploy.mutationpolicy import API_VERSIONS

        _, found, _ = self.raw("GET", "/version")
        minor = int("".join(c for c in str(found.get("minor", "")) if c.isdigit()) or 0)
        if minor < 32:
            why = "it has no MutatingAdmissionPolicy (alpha from 1.32)"
        elif minor < 34:
            why = "it has MutatingAdmissionPolicy as v1alpha1 at most, a version ServingGate does not generate"
        elif minor < 36:
            why = "v1beta1 is served only with --feature-gates=MutatingAdmissionPolicy=true --runtime-config=admissionregistration.k8s.io/v1beta1=true"
        else:
            why = "v1 is turned off (--runtime-config)"
        return f"the API server ({found.get('gitVersion', '?')}) serves no MutatingAdmissionPolicy at {' or '.join(API_VERSIONS)}: {why}"

    @contextlib.contextmanager
    def mutating_policy(self, ns: str, version: str) -> Iterator[None]:
        """Our opt-in gang's policy installed as `manifests` generates it, its binding narrowed to
        namespace `ns` (a shared cluster's other namespaces are left alone); removed at the end."""
        from webhook.deploy.mutationpolicy import GROUP, policy_and_binding

        policy, binding = policy_and_binding(version=version)
        name = f"{policy['metadata']['name']}-e2e-{ns}"
        policy["metadata"]["name"] = binding["metadata"]["name"] = binding["spec"]["policyName"] = name
        binding["spec"]["matchResources"]["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": ns}}
        made = []
        try:
            for obj, plural in ((policy, "mutatingadmissionpolicies"), (binding, "mutatingadmissionpolicybindings")):
                status, body, _ = self.raw("POST", f"/apis/{GROUP}/{version}/{plural}", obj)
                assert status == 201, body
                made.append(f"/apis/{GROUP}/{version}/{plural}/{name}")
            time.sleep(3)  # the policy reaches the admission plugin through an informer
            yield
        finally:
            for path in reversed(made):
                self.raw("DELETE", path)

    def apiserver_metric(self, metric: str, **labels: str) -> float:
        """The sum of an API server metric over the samples whose labels include `labels` (GET /metrics)."""
        m, url, headers, _, _ = self.api.param_serialize("GET", "/metrics", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"])
        resp = self.api.call_api(m, url, header_params=headers, _request_timeout=60)
        return metric_sum(resp.read().decode(), metric, labels)

    def apply_warnings(self, ns: str, body: dict, dry_run: bool = False) -> tuple[int, dict, list[str]]:
        """Create a ModelServing as `kubectl apply` would and keep what kubectl prints: (status, body, warnings)."""
        query = [("dryRun", "All")] if dry_run else None
        return self.raw("POST", f"/apis/{MS_GROUP}/{MS_VERSION}/namespaces/{ns}/modelservings", body, query=query)

    def get_ms(self, ns: str, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(MS_GROUP, MS_VERSION, ns, "modelservings", name)

    def patch_ms(self, ns: str, name: str, patch: Any, kind: str = "merge") -> dict:
        """A JSON merge patch (dict) or a JSON patch (list, kind="json")."""
        return self._patch(f"/apis/{MS_GROUP}/{MS_VERSION}/namespaces/{ns}/modelservings/{name}", patch, kind)

    def scale_ms(self, ns: str, name: str, replicas: int) -> dict:
        return self._patch(f"/apis/{MS_GROUP}/{MS_VERSION}/namespaces/{ns}/modelservings/{name}/scale", {"spec": {"replicas": replicas}}, "merge")

    def _patch(self, path: str, body: Any, kind: str) -> dict:
        ctype = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}[kind]
        status, data, _ = self.raw("PATCH", path, body, ctype)
        if status >= 300:
            raise ApiException(status=status, reason=str(data.get("reason")), body=json.dumps(data))
        return data

    def podgroups(self, ns: str) -> list[dict]:
        return self.custom.list_namespaced_custom_object(PG_GROUP, PG_VERSION, ns, "podgroups")["items"]

    def pods(self, ns: str, selector: str = "") -> list[client.V1Pod]:
        return self.core.list_namespaced_pod(ns, label_selector=selector).items

    def crd(self, name: str) -> dict | None:
        try:
            return self.api.sanitize_for_serialization(self.ext.read_custom_resource_definition(name))  # type: ignore[no-any-return]
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # ---- namespaces and nodes ----
    def namespace(self, prefix: str, judged: bool = True) -> str:
        """A fresh namespace; `judged` labels it for our webhook's namespaceSelector."""
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        labels = {E2E_LABEL: "true" if judged else "unjudged", JUDGE_LABEL: JUDGE}
        self.core.create_namespace({"metadata": {"name": name, "labels": labels}})
        return name

    def delete_namespace(self, name: str) -> None:
        with contextlib.suppress(ApiException):
            # pods first, at once: KWOK answers a graceful delete, but nothing should wait on it
            self.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        with contextlib.suppress(ApiException):
            self.core.delete_namespace(name)

    def node(self, name: str, owner: str, npu: int = 8, gpu: int = 0, cpu: str = "64", labels: dict[str, str] | None = None) -> str:
        """A node KWOK manages (annotation kwok.x-k8s.io/node=fake): allocatable as given, `pods` included
        (Volcano's pod-count predicate refuses every pod without it); labelled for the test that owns it."""
        allocatable = {"cpu": cpu, "memory": "512Gi", "pods": "110"}
        if npu:
            allocatable[NPU] = str(npu)
        if gpu:
            allocatable[GPU] = str(gpu)
        body = {
            "metadata": {
                "name": name,
                "labels": {"type": "kwok", E2E_LABEL: "true", NODE_OWNER: owner, "kubernetes.io/hostname": name, **(labels or {})},
                "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {},
            "status": {"capacity": allocatable, "allocatable": allocatable},
        }
        self.core.create_node(body)
        return name

    def delete_nodes(self, owner: str) -> None:
        for node in self.core.list_node(label_selector=f"{NODE_OWNER}={owner}").items:
            with contextlib.suppress(ApiException):
                self.core.delete_node(node.metadata.name)


def _warnings(headers: Any) -> list[str]:
    """The text of each `Warning: 299 - "..."` header (RFC 7234, as the API server sends them)."""
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else [v for k, v in (headers or {}).items() if k.lower() == "warning"]
    out = []
    for value in values:
        for m in re.finditer(r'299 - "((?:[^"\\]|\\.)*)"', value):
            out.append(m[1].replace('\\"', '"').replace("\\\\", "\\"))
    return out


def metric_sum(text: str, name: str, labels: dict[str, str]) -> float:
    """Sum the Prometheus text samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"{re.escape(name)}\{{(.*)\}} (\S+)$", line)
        if not m:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m[1]))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m[2])
    return total


def node_ready(cluster: Cluster, name: str) -> bool:
    node = cluster.core.read_node(name)
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def running_ready(pod: client.V1Pod) -> bool:
    if pod.metadata.deletion_timestamp is not None or pod.status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


# ---- probes: is each component answering through this kubeconfig? ----

COMPONENTS = ("kthena", "volcano-scheduler", "volcano-controllers", "kwok", "kube-scheduler", "held-pods")


def probe_stack(cluster: Cluster, timeout: float = 30.0) -> dict[str, str | None]:
    """component -> None when it answers, else why not. Probes as a user would see each answer:
    Kthena sets a probe ModelServing's status.observedGeneration, Volcano's controllers open the
    `default` queue, KWOK makes a probe node Ready, Volcano's scheduler binds a probe pod to it, and
    the default scheduler (kube-scheduler, `default-scheduler`) another, and a deleted pod with a
    finalizer stays terminating on a node of KWOK's (`held-pods`)."""
    found: dict[str, str | None] = dict.fromkeys(COMPONENTS)
    ns = cluster.namespace("sg-e2e-probe", judged=False)
    node = f"sg-e2e-probe-{ns[-6:]}"
    try:
        if cluster.crd(f"modelservings.{MS_GROUP}") is None:
            found["kthena"] = "the ModelServing CRD is not installed"
        else:
            found["kthena"] = _probe_kthena(cluster, ns, timeout)
        missing = [n for n in ("podgroups", "queues") if cluster.crd(f"{n}.{PG_GROUP}") is None]
        if missing:
            found["volcano-controllers"] = found["volcano-scheduler"] = f"Volcano's CRDs are missing: {', '.join(missing)}"
        else:
            found["volcano-controllers"] = _probe_queue(cluster, timeout)
        cluster.node(node, ns, npu=1, gpu=1)
        try:
            wait_for(lambda: node_ready(cluster, node), timeout=timeout, what="probe node Ready")
        except AssertionError:
            found["kwok"] = f"KWOK did not make node {node} (annotation {KWOK_ANNOTATION}=fake) Ready within {timeout:.0f}s"
        if found["volcano-scheduler"] is None:
            found["volcano-scheduler"] = _probe_scheduler(cluster, ns, timeout)
        found["kube-scheduler"] = _probe_default_scheduler(cluster, ns, timeout)
        found["held-pods"] = found["kwok"] or _probe_hold(cluster, ns, node, timeout)
    finally:
        cluster.delete_nodes(ns)
        cluster.delete_namespace(ns)
    return found


def _probe_kthena(cluster: Cluster, ns: str, timeout: float) -> str | None:
    # one group whose pod no scheduler takes (replicas 0 is no probe: Kthena 3cc05728 never syncs it)
    ms = modelserving("probe", replicas=1, roles=[role("r", replicas=1)], scheduler="servinggate-e2e-none")
    cluster.create_ms(ns, ms)
    try:
        wait_for(lambda: (cluster.get_ms(ns, "probe").get("status") or {}).get("observedGeneration"), timeout=timeout, what="Kthena status")
    except AssertionError:
        return f"Kthena's controller did not observe a ModelServing within {timeout:.0f}s (status.observedGeneration unset)"
    return None


def _probe_queue(cluster: Cluster, timeout: float) -> str | None:
    def opened() -> bool:
        try:
            queue = cluster.custom.get_cluster_custom_object(PG_GROUP, PG_VERSION, "queues", "default")
        except ApiException:
            return False
        return (queue.get("status") or {}).get("state") == "Open"

    try:
        wait_for(opened, timeout=timeout, what="default queue Open")
    except AssertionError:
        return f"Volcano's controller-manager did not open the `default` queue within {timeout:.0f}s"
    return None


def _probe_scheduler(cluster: Cluster, ns: str, timeout: float) -> str | None:
    pod = {
        "metadata": {"name": "probe"},
        "spec": {"schedulerName": "volcano", "nodeSelector": {NODE_OWNER: ns}, "containers": [{"name": "c", "image": "probe"}]},
    }
    cluster.core.create_namespaced_pod(ns, pod)
    try:
        wait_for(lambda: cluster.core.read_namespaced_pod("probe", ns).spec.node_name, timeout=timeout, what="probe pod bound")
    except AssertionError:
        return f"Volcano's scheduler (schedulerName volcano) did not bind a probe pod within {timeout:.0f}s"
    return None


def _probe_default_scheduler(cluster: Cluster, ns: str, timeout: float) -> str | None:
    pod = {"metadata": {"name": "probe-default"}, "spec": {"nodeSelector": {NODE_OWNER: ns}, "containers": [{"name": "c", "image": "probe"}]}}
    cluster.core.create_namespaced_pod(ns, pod)
    try:
        wait_for(lambda: cluster.core.read_namespaced_pod("probe-default", ns).spec.node_name, timeout=timeout, what="probe pod bound")
    except AssertionError:
        try:
            holder = cluster.coordination.read_namespaced_lease("kube-scheduler", "kube-system").spec.holder_identity
            lease = f"lease kube-system/kube-scheduler held by {holder!r}"
        except ApiException as exc:
            lease = "no lease kube-system/kube-scheduler" if exc.status == 404 else f"lease kube-system/kube-scheduler unreadable ({exc.status})"
        return f"no default scheduler (kube-scheduler, schedulerName default-scheduler) bound a probe pod within {timeout:.0f}s; {lease}"
    return None


def _probe_hold(cluster: Cluster, ns: str, node: str, timeout: float) -> str | None:
    pod = {"metadata": {"name": "probe-held", "finalizers": [HOLD]}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "probe"}]}}
    cluster.core.create_namespaced_pod(ns, pod)
    try:
        wait_for(lambda: running_ready(cluster.core.read_namespaced_pod("probe-held", ns)), timeout=timeout, what="held probe pod Running")
        cluster.core.delete_namespaced_pod("probe-held", ns)
        time.sleep(3)
        try:
            cluster.core.read_namespaced_pod("probe-held", ns)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return (
                "a deleted pod with a finalizer was gone within 3s: the node agent empties finalizers (KWOK's default `fast` pod-delete "
                "stage does); the tests that hold pods terminating need one that waits for them (docs/e2e.md)"
            )
    except AssertionError:
        return f"a pod bound to the probe node was not Running and Ready within {timeout:.0f}s"
    finally:
        release(cluster, ns)
    return None


# ---- probes of the autoscalers beside Kthena: KServe and the CronHPA controller ----
# Probed only when a test asks for them (conftest `need`), so the other scenarios do not wait on them.

AUTOSCALER_COMPONENTS = ("kserve", "cronhpa")


def probe_autoscalers(cluster: Cluster, timeout: float = 60.0) -> dict[str, str | None]:
    """component -> None when it answers, else why not: KServe's controller makes the Deployment of
    a probe InferenceService in Standard mode (which also passes KServe's webhooks, when they are
    registered), and the CronHPA controller scales a probe Deployment by a job that runs every second."""
    found: dict[str, str | None] = dict.fromkeys(AUTOSCALER_COMPONENTS)
    ns = cluster.namespace("sg-e2e-probe-as", judged=False)
    try:
        found["kserve"] = _probe_kserve(cluster, ns, timeout)
        found["cronhpa"] = _probe_cronhpa(cluster, ns, timeout)
    finally:
        cluster.delete_namespace(ns)
    return found


def _refused(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body).get("message"))
    except (TypeError, ValueError):
        return str(exc.reason)


def _probe_kserve(cluster: Cluster, ns: str, timeout: float) -> str | None:
    if cluster.crd(f"inferenceservices.{ISVC_GROUP}") is None:
        return f"the InferenceService CRD ({ISVC_GROUP}) is not installed"
    isvc = inference_service("probe", None, mode="Standard")
    isvc["spec"]["predictor"]["nodeSelector"] = {NODE_OWNER: "servinggate-e2e-nowhere"}  # its pods never run
    try:
        cluster.create_isvc(ns, isvc)
    except ApiException as exc:
        return f"the API server refused a probe InferenceService ({exc.status}): {_refused(exc)}"
    try:
        poll(lambda: cluster.deployment(ns, "probe-predictor"), timeout, "KServe's Deployment")
    except AssertionError:
        return f"KServe's controller did not create Deployment probe-predictor for a probe InferenceService (Standard mode) within {timeout:.0f}s"
    return None


def _probe_cronhpa(cluster: Cluster, ns: str, timeout: float) -> str | None:
    if cluster.crd(f"cronhorizontalpodautoscalers.{CRONHPA_GROUP}") is None:
        return f"the CronHorizontalPodAutoscaler CRD ({CRONHPA_GROUP}) is not installed"
    deployment = {
        "metadata": {"name": "probe"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "probe"}},
            "template": {"metadata": {"labels": {"app": "probe"}}, "spec": {"containers": [{"name": "c", "image": "probe"}]}},
        },
    }
    cluster.apps.create_namespaced_deployment(ns, deployment)
    try:
        cluster.create_cronhpa(ns, cronhpa("probe", {"apiVersion": "apps/v1", "kind": "Deployment", "name": "probe"}, [cron_job("up", "*/1 * * * * *", 1)]))
    except ApiException as exc:
        return f"the API server refused a probe CronHorizontalPodAutoscaler ({exc.status}): {_refused(exc)}"
    try:
        poll(lambda: cluster.apps.read_namespaced_deployment("probe", ns).spec.replicas == 1, timeout, "the probe Deployment scaled")
    except AssertionError:
        return f"the CronHPA controller did not scale a probe Deployment 0 -> 1 (a job every second) within {timeout:.0f}s"
    return None


# ---- faults: the restart commands, and pods kept terminating ----


def restart_command(component: str) -> str | None:
    """The shell command that restarts `component` on this cluster (RESTART_ENV), or None when unset."""
    return os.environ.get(RESTART_ENV[component]) or None


def restart(command: str) -> float:
    """Run a restart command (a shell command, as given in the environment); seconds it took."""
    start = time.monotonic()
    out = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{command!r} exited with {out.returncode}: {out.stderr[-2000:]}"
    return time.monotonic() - start


def hold(cluster: Cluster, ns: str, names: list[str]) -> None:
    """Add the HOLD finalizer to these pods: once deleted they stay terminating until `release`, as a
    pod does through its grace period on a kubelet (KWOK deletes a pod without finalizers at once)."""
    for name in names:
        cluster.core.patch_namespaced_pod(name, ns, {"metadata": {"finalizers": [HOLD]}})


def release(cluster: Cluster, ns: str) -> None:
    """Remove the HOLD finalizer from every pod of the namespace that has it."""
    for pod in cluster.pods(ns):
        if HOLD in (pod.metadata.finalizers or []):
            left = [f for f in pod.metadata.finalizers if f != HOLD]
            with contextlib.suppress(ApiException):
                cluster.core.patch_namespaced_pod(pod.metadata.name, ns, [{"op": "replace", "path": "/metadata/finalizers", "value": left}])


def answering(pred: Callable[[], Any]) -> Callable[[], Any]:
    """`pred`, reading a failed request (the API server restarting) as "not yet"."""

    def check() -> Any:
        try:
            return pred()
        except (ApiException, OSError, urllib3.exceptions.HTTPError):
            return False

    return check


# ---- object builders, in our words (after Kthena's examples/model-serving) ----


def container(name: str, npu: int = 0, gpu: int = 0, cpu: str = "100m") -> dict:
    resources: dict[str, str] = {"cpu": cpu}
    if npu:
        resources[NPU] = str(npu)
    if gpu:
        resources[GPU] = str(gpu)
    return {"name": name, "image": "registry.example/serving:1", "resources": {"requests": dict(resources), "limits": dict(resources)}}


def role(name: str, replicas: int = 1, workers: int = 0, npu: int = 0, gpu: int = 0, node_selector: dict[str, str] | None = None) -> dict:
    def template(cname: str) -> dict:
        spec: dict[str, Any] = {"containers": [container(cname, npu, gpu)]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        return {"spec": spec}

    out: dict[str, Any] = {"name": name, "replicas": replicas, "workerReplicas": workers, "entryTemplate": template("leader")}
    if workers:
        out["workerTemplate"] = template("worker")
    return out


def modelserving(name: str, replicas: int, roles: list[dict], min_roles: dict[str, int] | None = None, scheduler: str | None = "volcano", **spec: Any) -> dict:
    template: dict[str, Any] = {"roles": roles}
    if min_roles is not None:
        template["gangPolicy"] = {"minRoleReplicas": min_roles}
    body: dict[str, Any] = {"replicas": replicas, "template": template, **spec}
    if scheduler is not None:
        body["schedulerName"] = scheduler
    return {"apiVersion": f"{MS_GROUP}/{MS_VERSION}", "kind": "ModelServing", "metadata": {"name": name}, "spec": body}


def ms_target(name: str = "sample") -> dict:
    """An autoscaler's `scaleTargetRef` for the ModelServing `name`."""
    return {"apiVersion": f"{MS_GROUP}/{MS_VERSION}", "kind": "ModelServing", "name": name}


def hpa_on(name: str, target: str, min_replicas: int = 1, max_replicas: int = 3) -> dict:
    """An autoscaling/v2 HPA of the ModelServing `target`, on CPU (no metrics server here: the
    HPA controller scales it only to bring it inside its bounds)."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": ms_target(target),
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
        },
    }


def gang_example(owner: str, npu: int = 2) -> dict:
    """Kthena's gang-scheduling example (docs/kthena user guide; the file is examples/model-serving/
    gangPolicy.yaml): one ServingGroup, prefill and decode with two replicas of one entry and one worker
    each, minRoleReplicas prefill 2 and decode 1; here each pod also asks for `npu` NPUs and is kept
    on the test's own nodes."""
    sel = {NODE_OWNER: owner}
    roles = [role("prefill", replicas=2, workers=1, npu=npu, node_selector=sel), role("decode", replicas=2, workers=1, npu=npu, node_selector=sel)]
    return modelserving("sample", 1, roles, min_roles={"prefill": 2, "decode": 1})


def inference_service(name: str, owner: str | None, mode: str | None = None, **predictor: Any) -> dict:
    """An InferenceService whose predictor is a plain container (no model, no runtime: KServe
    deploys the container as given), its pods pinned to `owner`'s nodes; `mode` the
    serving.kserve.io/deploymentMode annotation (None: none, the cluster's default mode);
    `predictor` its autoscaling fields (minReplicas, maxReplicas, scaleMetric, scaleTarget)."""
    res = {"cpu": "100m", "memory": "128Mi"}
    spec: dict[str, Any] = {"containers": [{"name": "kserve-container", "image": "registry.example/qwen:1", "resources": {"requests": res, "limits": res}}]}
    if owner is not None:
        spec["nodeSelector"] = {NODE_OWNER: owner}
    spec.update(predictor)
    meta: dict[str, Any] = {"name": name}
    if mode is not None:
        meta["annotations"] = {KSERVE_MODE: mode}
    return {"apiVersion": f"{ISVC_GROUP}/{ISVC_VERSION}", "kind": "InferenceService", "metadata": meta, "spec": {"predictor": spec}}


def guide_isvc(owner: str, mode: str | None = "Standard", name: str = "qwen-cronhpa") -> dict:
    """The ACK guide's InferenceService `qwen-cronhpa`: minReplicas 1, maxReplicas 10, cpu at 10%."""
    return inference_service(name, owner, mode, minReplicas=1, maxReplicas=10, scaleMetric="cpu", scaleTarget=10)


def cron_job(name: str, schedule: str, size: int, run_once: bool = False) -> dict:
    job: dict[str, Any] = {"name": name, "schedule": schedule, "targetSize": size}
    if run_once:
        job["runOnce"] = True
    return job


def cronhpa(name: str, target: dict, jobs: list[dict], annotations: dict[str, str] | None = None) -> dict:
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": f"{CRONHPA_GROUP}/{CRONHPA_VERSION}",
        "kind": "CronHorizontalPodAutoscaler",
        "metadata": meta,
        "spec": {"scaleTargetRef": dict(target), "jobs": jobs},
    }


def seconds_ahead(seconds: int) -> str:
    """A CronHPA schedule (six fields, seconds first) for one moment `seconds` from now, by minute
    and second only (any hour: right in every time zone of whole hours, whatever the controller's TZ)."""
    at = time.gmtime(time.time() + seconds)
    return f"{at.tm_sec} {at.tm_min} * * * *"


# ---- our pieces, started from this checkout ----


class Supervised(abc.ABC):
    """One of our commands run from the checkout as a child process, its output in `log_path`:
    started until `healthy()` says so, stopped with SIGTERM (then killed), its log kept for the
    test's failure message."""

    name = "process"
    stop_timeout = 30.0

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def launch(self, args: list[str]) -> None:
        with self.log_path.open("ab") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self.healthy, timeout=60, what=f"our {self.name} healthy")

    @abc.abstractmethod
    def healthy(self) -> bool:
        """Answers its health endpoint (after `alive()`)."""

    def alive(self) -> None:
        """Raise with the log's tail when the process has exited."""
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"our {self.name} exited with {self.proc.returncode}:\n{self.log()[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None:
            processes.stop(self.proc, self.stop_timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class OurWebhook(Supervised):
    """`python -m webhook serve` on 127.0.0.1 with generated certificates, registered by URL with
    the configurations `python -m webhook manifests` derives from the rule registry; only namespaces
    labelled servinggate-e2e=true are judged, so nothing else on the cluster is touched."""

    name = "webhook"

    def __init__(self, cluster: Cluster, workdir: Path, extra: tuple[str, ...] = ()) -> None:
        super().__init__(workdir / "webhook.log")
        self.cluster = cluster
        self.workdir = workdir
        self.port = free_port()
        self.metrics_port = free_port()
        self.certs = workdir / "certs"
        self.suffix = uuid.uuid4().hex[:6]
        self.extra = extra
        self.names: list[tuple[str, str]] = []

    def start(self) -> OurWebhook:
        args = [sys.executable, "-m", "webhook", "serve", "--host", "127.0.0.1", "--port", str(self.port), "--certs-dir", str(self.certs)]
        args += [
            "--workers",
            "1",
            "--metrics-port",
            str(self.metrics_port),
            "--metrics-dir",
            str(self.workdir / "metrics"),
            "--kubeconfig",
            self.cluster.kubeconfig,
        ]
        self.launch(args + list(self.extra))
        return self

    def healthy(self) -> bool:
        self.alive()
        import ssl
        import urllib.request

        if not (self.certs / "ca.crt").exists():
            return False
        ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/readyz", context=ctx, timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def configurations(self, failure_policy: str | None = None) -> list[dict]:
        from webhook.deploy.generating import render

        ca = base64.b64encode((self.certs / "ca.crt").read_bytes()).decode()
        out = []
        for doc in yaml.safe_load_all(render()):
            if not doc or doc.get("kind") not in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
                continue
            doc["metadata"]["name"] = f"{doc['metadata']['name']}-e2e-{self.suffix}"
            doc["metadata"].setdefault("labels", {}).update({E2E_LABEL: "true", RUN_LABEL: RUN})
            for hook in doc.get("webhooks") or []:
                path = (hook["clientConfig"].get("service") or {}).get("path", "/")
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": ca}
                selector = hook.setdefault("namespaceSelector", {})
                selector.setdefault("matchLabels", {}).update({E2E_LABEL: "true", JUDGE_LABEL: JUDGE})
                if failure_policy:
                    hook["failurePolicy"] = failure_policy
            out.append(doc)
        return out

    def register(self) -> None:
        """Our configurations, after removing what an earlier run left (a run cut off with the API
        server down: configurations with failurePolicy Fail pointing at a server that is gone)."""
        self.remove_leftovers()
        for doc in self.configurations():
            name = doc["metadata"]["name"]
            if doc["kind"] == "ValidatingWebhookConfiguration":
                self.cluster.admission.create_validating_webhook_configuration(doc)
                self.names.append(("validating", name))
            else:
                self.cluster.admission.create_mutating_webhook_configuration(doc)
                self.names.append(("mutating", name))

    def _delete(self, kind: str, name: str) -> None:
        try:
            if kind == "validating":
                self.cluster.admission.delete_validating_webhook_configuration(name)
            else:
                self.cluster.admission.delete_mutating_webhook_configuration(name)
        except ApiException as e:
            if e.status != 404:
                raise

    def unregister(self, deadline_s: float = 180.0) -> None:
        """Remove every configuration we registered, retrying until the API server answers (it may
        be restarting, or take a minute to stop with watches open): one left behind would refuse
        every pod create in its scope. Raises only when the deadline passes."""
        end = time.monotonic() + deadline_s
        while self.names:
            kind, name = self.names[0]
            try:
                self._delete(kind, name)
            except Exception:  # the API server away: connection refused, a 5xx, a timeout
                if time.monotonic() > end:
                    raise
                time.sleep(2)
                continue
            self.names.pop(0)

    @contextlib.contextmanager
    def failing(self, entry: str, policy: str) -> Iterator[None]:
        """Our registered entry `entry` (its name before the domain) with `failurePolicy: policy`
        for the block, as a component patches it (the mutating-policy components turn the opt-in
        gang's to Ignore), then as generated again."""
        [name] = [n for k, n in self.names if k == "mutating"]
        conf = self.cluster.admission.read_mutating_webhook_configuration(name)
        [index] = [i for i, hook in enumerate(conf.webhooks) if hook.name.split(".", 1)[0] == entry]
        before = conf.webhooks[index].failure_policy

        def set_to(value: str) -> None:
            patch = [{"op": "replace", "path": f"/webhooks/{index}/failurePolicy", "value": value}]
            self.cluster.admission.patch_mutating_webhook_configuration(name, patch)

        set_to(policy)
        try:
            yield
        finally:
            set_to(before)

    def remove_leftovers(self) -> None:
        """Configurations of ours an earlier run did not remove: named `servinggate-*-e2e-*`,
        labelled as e2e objects and by another run (never anything else on a shared cluster, nor
        what this run's other workers registered)."""
        for kind, lister in (
            ("validating", self.cluster.admission.list_validating_webhook_configuration),
            ("mutating", self.cluster.admission.list_mutating_webhook_configuration),
        ):
            for conf in lister(label_selector=f"{E2E_LABEL}=true,{RUN_LABEL}!={RUN}").items:
                name = conf.metadata.name
                if name.startswith("servinggate-") and "-e2e-" in name:
                    self._delete(kind, name)

    def metric(self, name: str, **labels: str) -> float:
        """The sum of a counter over the samples whose labels include `labels`."""
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        return metric_sum(text, name + "_total", labels) or metric_sum(text, name, labels)


class OurReconciler(Supervised):
    """`python -m webhook reconcile` writing deletion costs, without leader election."""

    name = "reconciler"
    stop_timeout = 20.0

    def __init__(self, cluster: Cluster, workdir: Path) -> None:
        super().__init__(workdir / "reconciler.log")
        self.cluster = cluster
        self.health_port = free_port()

    def start(self) -> OurReconciler:
        args = [sys.executable, "-m", "webhook", "reconcile", "--kubeconfig", self.cluster.kubeconfig, "--enable-scale-in-score", "true"]
        args += ["--leader-elect", "false", "--health-host", "127.0.0.1", "--health-port", str(self.health_port), "--scoring-qps", "200"]
        self.launch(args)
        return self

    def healthy(self) -> bool:
        import urllib.request

        self.alive()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/healthz", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def writes(self) -> float:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        return metric_sum(text, "servinggate_scalein_writes_total", {})


def plan(cluster: Cluster, workload: str) -> dict:
    """`python -m webhook plan --kubeconfig ... --workload NS/NAME --output json`, parsed."""
    out = subprocess.run(
        [sys.executable, "-m", "webhook", "plan", "--kubeconfig", cluster.kubeconfig, "--workload", workload, "--output", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data: dict = json.loads(out.stdout)
    return data


class Refusals:
    """Refusals of one resource from the start of the block: ours (our webhook's metric, this worker's
    webhook only) and the API server's rejections through our entry for it
    (apiserver_admission_webhook_rejection_count), which count every worker's webhook: compared only
    when this is the only worker (with several, another worker's test may be refusing on purpose)."""

    def __init__(self, cluster: Cluster, hook: OurWebhook, resource: str, entry: str) -> None:
        self.cluster, self.hook, self.resource, self.entry = cluster, hook, resource, entry
        self.alone = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") == "1"
        self.before = self.now()

    def now(self) -> dict[str, float]:
        return {
            "refused": self.hook.metric("servinggate_admission_requests", resource=self.resource, allowed="false"),
            "allowed": self.hook.metric("servinggate_admission_requests", resource=self.resource, allowed="true"),
            "rejected": self.cluster.apiserver_metric("apiserver_admission_webhook_rejection_count", name=self.entry) if self.alone else 0.0,
        }

    def since(self) -> dict[str, float]:
        now = self.now()
        return {k: now[k] - self.before[k] for k in now}


def kubeconfig_from_env() -> str | None:
    value = os.environ.get(ENV, "")
    return value or None


def poll(pred: Callable[[], Any], timeout: float, what: str, every: float = 0.5) -> Any:
    """wait_for with a custom period (the cluster is slower than an in-process fake)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


# ---- the other webhooks, asked alone (an AdmissionReview to the URL their configuration names) ----


def hook_url(cluster: Cluster, config_kind: str, resource: str, not_ours: bool = True) -> tuple[str, bytes] | None:
    """(url, caBundle) of the first webhook that is not ours and whose rules cover `resource`."""
    lister = cluster.admission.list_validating_webhook_configuration if config_kind == "validating" else cluster.admission.list_mutating_webhook_configuration
    for conf in lister().items:
        if not_ours and conf.metadata.name.startswith("servinggate-"):
            continue
        for hook in conf.webhooks or []:
            if any(resource in (r.resources or []) for r in hook.rules or []) and hook.client_config.url:
                return hook.client_config.url, base64.b64decode(hook.client_config.ca_bundle or "")
    return None


def ask(url: str, ca: bytes, request: dict) -> dict:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": str(uuid.uuid4()), **request}}
    with tempfile.NamedTemporaryFile("wb", suffix=".crt") as f:
        f.write(ca)
        f.flush()
        ctx = ssl.create_default_context(cafile=f.name)
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        return json.loads(r.read())["response"]  # type: ignore[no-any-return]


def create_request(ns: str, obj: dict, group: str, version: str, kind: str, resource: str) -> dict:
    return {
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "operation": "CREATE",
        "namespace": ns,
        "name": obj["metadata"]["name"],
        "object": obj,
        "userInfo": {"username": "e2e-oracle"},
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }


def ours(webhook: OurWebhook) -> tuple[str, bytes]:
    """(url, CA) of our validating endpoint, for `ask`."""
    return f"https://127.0.0.1:{webhook.port}/validate", (webhook.certs / "ca.crt").read_bytes()


def kserve_defaulted(cluster: Cluster, ns: str, isvc: dict) -> dict:
    """The InferenceService as the API server sends it to the validating webhooks: after KServe's
    defaulting webhook (which writes the deployment mode it will use into the annotation: the
    config map's default when there is none, `Standard` for the deprecated `RawDeployment`)."""
    import jsonpatch

    found = hook_url(cluster, "mutating", "inferenceservices")
    if found is None:
        return isvc
    answer = ask(*found, create_request(ns, isvc, ISVC_GROUP, ISVC_VERSION, "InferenceService", "inferenceservices"))
    assert answer["allowed"], answer
    if not answer.get("patch"):
        return isvc
    patch = json.loads(base64.b64decode(answer["patch"]))
    return jsonpatch.apply_patch(isvc, patch)  # type: ignore[no-any-return]


@contextlib.contextmanager
def stopped(webhook: OurWebhook) -> Iterator[None]:
    """Our webhook down for the block (its configurations stay registered), then back on the same port."""
    webhook.stop()
    try:
        yield
    finally:
        webhook.start()


# ---- an opt-in gang (servinggate.io/gang), as a user writes it ----------------------------------

GANG_LABEL = "servinggate.io/gang"


def opt_in_gang(owner: str, replicas: int, name: str = "gang", complete: bool = False) -> dict:
    """A Deployment of an opt-in gang, 1 NPU a pod, pinned to `owner`'s nodes: no schedulerName,
    the gang label (what our mutation completes); `complete`: written as it needs to be without
    us (Volcano's scheduler and the PodGroup annotation already there)."""
    res = {NPU: "1", "cpu": "100m"}
    meta: dict[str, Any] = {"labels": {"app": name, GANG_LABEL: name}}
    spec: dict[str, Any] = {
        "nodeSelector": {NODE_OWNER: owner},
        "containers": [{"name": "c", "image": "registry.example/infer:1", "resources": {"requests": res, "limits": res}}],
    }
    if complete:
        meta["annotations"] = {"scheduling.k8s.io/group-name": name}
        spec["schedulerName"] = "volcano"
    return {
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {"metadata": meta, "spec": spec}},
    }


def gang_podgroup(name: str, min_member: int) -> dict:
    """The PodGroup an opt-in gang's pods name (the user makes it; Volcano waits for min_member)."""
    return {"apiVersion": f"{PG_GROUP}/{PG_VERSION}", "kind": "PodGroup", "metadata": {"name": name}, "spec": {"minMember": min_member, "queue": "default"}}
