"""One small fake kube-apiserver for every test that needs a cluster. The official client talks to
it over real HTTP, so request building, content types, status decoding and watch streaming are
exercised the way they are against a real control plane."""

from __future__ import annotations

import base64
import bisect
import copy
import itertools
import json
import re
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonpatch
import yaml
from kubernetes import client

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

SECRET_RE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/secrets(?:/(?P<name>[^/]+))?$")
CONFIGMAP_RE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)$")
POD_RE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)$")
HOOK_RE = re.compile(r"^/apis/admissionregistration\.k8s\.io/v1/(?P<kind>validating|mutating)webhookconfigurations/(?P<name>[^/]+)$")
LEASE_RE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/(?P<ns>[^/]+)/leases(?:/(?P<name>[^/]+))?$")
CREATE_RE = re.compile(r"^/(?:api/v1|apis/workload\.serving\.volcano\.sh/v1alpha1)/namespaces/(?P<ns>[^/]+)/(?P<resource>pods|modelservings)$")
GROUP_VERSION_RE = re.compile(r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)$")
CUSTOM_RE = re.compile(r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?$")
LISTS = {"/api/v1/nodes": "nodes", "/api/v1/pods": "pods"}


def status(code: int, reason: str, message: str) -> dict:
    """A failure `Status` as kube-apiserver writes it."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def merge_patch(target: Any, patch: Any) -> Any:
    """JSON merge patch (RFC 7386)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_webhooks(target: dict, patch: dict) -> dict:
    """Strategic merge as the API server does it for webhook configurations: `webhooks` is a
    list merged by `name`; maps merge recursively."""
    patch = copy.deepcopy(patch)
    entries = patch.pop("webhooks", None)
    out = merge_patch(target, patch)
    if entries is not None:
        hooks = out.setdefault("webhooks", [])
        for entry in entries:
            for i, hook in enumerate(hooks):
                if hook["name"] == entry["name"]:
                    hooks[i] = merge_patch(hook, entry)
                    break
            else:
                hooks.append(entry)
    return out


@dataclass
class Call:
    """One request as the fake received it. It is recorded when the request arrives (so a test can
    wait for a watch that is still streaming); `status` is filled in just before the answer's
    status line goes out, so it is set by the time the client sees the answer."""

    method: str
    path: str  # without the query string
    query: dict[str, str]  # the last value of each parameter
    content_type: str
    status: int | None = None


@dataclass
class _Injected:
    method: str
    matches: Callable[[str], bool]
    code: int
    body: dict
    headers: dict[str, str] = field(default_factory=dict)
    watch: bool | None = None  # None: watches and plain requests alike
    times: int | None = 1  # None: every time


@dataclass
class _Watch:
    kind: str
    since: int
    timeout: int
    namespace: str = ""  # "" for every namespace


class _Expired:
    """Answer a watch with a 410 Gone ERROR event, as kube-apiserver does for a compacted version."""


Answer = tuple[int, dict] | tuple[int, dict, dict] | _Watch | _Expired

_FAKES_BY_HOST: dict[str, FakeAPI] = {}  # url -> the fake serving it, for FakeAPI.of(api_client)


class FakeAPI:
    """State and behaviour of a fake control plane, served on 127.0.0.1 over HTTP/1.1.

    What it serves (JSON only; anything else is a 404 `Status`):
      - Nodes and Pods: `GET /api/v1/{nodes,pods}` lists (in pages with `limit` and `continue`,
        from a snapshot taken at the first page), and with `?watch=true` a chunked watch
        stream from `resourceVersion` that ends after `min(timeoutSeconds, 2)` seconds; a watch
        from below `compacted` gets a 410 ERROR event. `GET` and JSON-Patch `PATCH` (with `test`
        ops honoured, failures answered 422) of `/api/v1/namespaces/{ns}/pods/{name}`; a pod
        PATCH takes `write_latency` seconds before it is applied (0 unless a test sets it), the
        way a real control plane spends its round trip on admission and storage, and waits
        while `hold_writes()` is in force.
      - Secrets: `POST` (409 AlreadyExists), `GET`, merge-patch `PATCH` with a
        `metadata.resourceVersion` precondition (409 Conflict).
      - Validating/mutating webhook configurations: `GET`, strategic-merge `PATCH` of `webhooks`
        by name, with the same resourceVersion precondition.
      - Leases (coordination.k8s.io/v1): `POST`, `GET`, `PUT` with optimistic concurrency.
      - ConfigMaps: `GET` of one, from `configmaps[(namespace, name)]`.
      - Discovery: `GET /apis/{group}/{version}` answers from `discovery["group/version"]`.
      - `GET /version` answers `version` (a v1.34 server's by default; None: 404, as a server
        that does not serve it).
      - Custom resources of a kind that is installed (`install_custom`, or `add_custom` of one
        of its objects): `GET` of one object, and lists and watches across all namespaces or
        in one (`/apis/{group}/{version}[/namespaces/{ns}]/{plural}`), paged and watched like
        pods; a kind not installed is a 404, as without its CRD.
      - Dry-run creates (`POST ...?dryRun=All`) of pods and ModelServings, through the admission
        webhooks a test lists in `mutating_webhooks` and `validating_webhooks` (`(name, fn)`,
        `fn(obj)` -> an AdmissionReview `response`, or None when the webhook is not called), worded
        as kube-apiserver words a refusal; ModelServings answer 404 while `modelservings_served`
        is False (Kthena's CRDs missing). Nothing is stored.

    Seeding and inspecting state: `load(nodes, pods)`, `add_pod`, `edit_pod`, `delete_pod` (these
    three emit watch events), `add_custom`, `edit_custom`, `delete_custom` (the same for custom
    objects; `customs[(group, plural)]` holds them by (namespace, name)), `annotations(key)`, `put_secret`, `secret`, `put_hook`, `hook`, and
    the dicts `nodes`, `pods` ("ns/name"), `secrets`, `hooks`, `leases`, `discovery`.

    What a test can observe: `requests` (every `Call`, in arrival order), `calls(method, regex)`,
    `count(method, prefix, **query)`, `patches` (pod key and JSON Patch ops of every accepted
    pod patch, in the order applied) and `patch_times` (time.monotonic() of each, same order).

    Scripted trouble, checked in this order before a request is routed:
      - `before`: entries `(method, path regex, fn)`. The first entry matching a request is
        removed and `fn(api)` runs under the lock, before the request is handled (e.g. another
        replica writes first); if it returns `(status, body)`, that is the answer.
      - `fail(method, path_regex, status, reason, message, times=None)`: answer matching requests
        with that failure `Status` — every time, or the first `times` times. For example
        `api.fail("GET", r"/secrets/", 403, "Forbidden", 'secrets "x" is forbidden')` makes every
        Secret read a 403, as RBAC without `get secrets` would.
      - `fault(method, prefix, code, headers=, watch=, body=, times=1)`: the same by path prefix,
        with extra headers (e.g. `Retry-After`) and a choice of watch or plain requests; a 410 on
        a watch is sent as a 410 ERROR event inside a 200 stream, as kube-apiserver does.
      - `before_patch`: `hook(key)`, run once just before the next pod patch is applied (e.g.
        someone else edits the pod between our read and our patch).

    Use: `with FakeAPI() as api:` (or `start()`/`close()`); `api.client()` gives an official
    `ApiClient` pointed at it (closed with the fake), `api.client_configuration` its
    configuration, `api.write_kubeconfig(path)` a kubeconfig for a subprocess. Calling the fake,
    `api(nodes, pods)`, loads nodes and pods and returns `(api, api.client())`: the scale-in tests'
    idiom."""

    def __init__(self, nodes: Iterable[dict] = (), pods: Iterable[dict] = ()) -> None:
        self.lock = threading.Condition()  # over an RLock: scripted hooks may call back into the fake
        self.watch_generation = 0  # a watch opened before the last end_watches() ends at once
        self.rv = 1000
        self.nodes: dict[str, dict] = {}
        self.pods: dict[str, dict] = {}
        self.secrets: dict[tuple[str, str], dict] = {}
        self.configmaps: dict[tuple[str, str], dict] = {}
        self.hooks: dict[tuple[str, str], dict] = {}
        self.leases: dict[str, dict] = {}
        self.discovery: dict[str, dict] = {}
        self.version: dict | None = {"major": "1", "minor": "34", "gitVersion": "v1.34.1", "platform": "linux/amd64"}
        self.customs: dict[tuple[str, str], dict[tuple[str, str], dict]] = {}
        self.mutating_webhooks: list[tuple[str, Callable[[dict], dict | None]]] = []
        self.validating_webhooks: list[tuple[str, Callable[[dict], dict | None]]] = []
        self.modelservings_served = True
        self.history: list[tuple[int, str, str, dict]] = []  # (rv, kind, event type, object) for watches
        self.compacted = 0  # watches from below this resourceVersion get 410 Gone
        self.requests: list[Call] = []
        self.patches: list[tuple[str, list]] = []
        self.patch_times: list[float] = []
        self.write_latency = 0.0  # seconds a pod PATCH takes before it is applied
        self.writes_open = threading.Event()  # cleared by hold_writes: pod PATCHes wait at the door
        self.writes_open.set()
        self.writes_waiting = 0
        self._pages: dict[str, tuple[str, list[dict]]] = {}  # continue token -> (resourceVersion, items left)
        self._page_ids = itertools.count(1)
        self.before: list[tuple[str, str, Callable[[FakeAPI], tuple[int, dict] | None]]] = []
        self.before_patch: Callable[[str], None] | None = None
        self.injected: list[_Injected] = []
        self.client_configuration: client.Configuration | None = None
        self._server: ThreadingHTTPServer | None = None
        self._clients: list[client.ApiClient] = []
        self.load(nodes, pods)

    # -- serving -------------------------------------------------------------------------------

    def start(self) -> FakeAPI:
        handler = type("BoundHandler", (_Handler,), {"api": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-apiserver", daemon=True).start()  # shutdown() waits one poll
        conf = client.Configuration()
        conf.host = self.url
        self.client_configuration = conf
        return self

    def close(self) -> None:
        self.writes_open.set()  # nothing stays held past the test
        self.end_watches()
        if self._server is not None and _FAKES_BY_HOST.get(self.url) is self:
            del _FAKES_BY_HOST[self.url]
        for c in self._clients:
            c.close()
        self._clients.clear()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        assert self._server is not None, "the fake API is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def client(self) -> client.ApiClient:
        """An official ApiClient for this fake; closed when the fake closes."""
        c = client.ApiClient(self.client_configuration)
        self._clients.append(c)
        _FAKES_BY_HOST[self.url] = self
        return c

    @staticmethod
    def of(api_client: client.ApiClient) -> FakeAPI | None:
        """The fake an ApiClient made by `client()` talks to, if it is still serving."""
        return _FAKES_BY_HOST.get(api_client.configuration.host)

    def end_watches(self) -> None:
        """End every watch stream open now, as a server does when it closes: a test that stops its
        watchers then waits for their threads without waiting out the streams' timeout."""
        with self.lock:
            self.watch_generation += 1
            self.lock.notify_all()

    def __call__(self, nodes: Iterable[dict] = (), pods: Iterable[dict] = ()) -> tuple[FakeAPI, client.ApiClient]:
        self.load(nodes, pods)
        return self, self.client()

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig whose current context is this fake (no credentials), for a subprocess."""
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "fake",
            "preferences": {},
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": "default"}}],
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    # -- state ----------------------------------------------------------------------------------

    def next_rv(self) -> str:
        with self.lock:
            self.rv += 1
            return str(self.rv)

    def load(self, nodes: Iterable[dict] = (), pods: Iterable[dict] = ()) -> None:
        """Nodes and pods present from the start (no watch events), each with a fresh resourceVersion."""
        with self.lock:
            for node in nodes:
                node = copy.deepcopy(node)
                node["metadata"]["resourceVersion"] = self.next_rv()
                self.nodes[node["metadata"]["name"]] = node
            for pod in pods:
                pod = copy.deepcopy(pod)
                pod["metadata"]["resourceVersion"] = self.next_rv()
                self.pods[_pod_key(pod)] = pod

    def emit(self, kind: str, etype: str, obj: dict) -> None:
        with self.lock:
            self.history.append((int(obj["metadata"]["resourceVersion"]), kind, etype, copy.deepcopy(obj)))
            self.lock.notify_all()

    def add_pod(self, pod: dict) -> None:
        with self.lock:
            pod = copy.deepcopy(pod)
            pod["metadata"]["resourceVersion"] = self.next_rv()
            self.pods[_pod_key(pod)] = pod
            self.emit("pods", "ADDED", pod)

    def delete_pod(self, key: str) -> None:
        with self.lock:
            pod = self.pods.pop(key)
            pod["metadata"]["resourceVersion"] = self.next_rv()
            self.emit("pods", "DELETED", pod)

    def edit_pod(self, key: str, fn: Callable[[dict], None]) -> None:
        with self.lock:
            pod = self.pods[key]
            fn(pod)
            pod["metadata"]["resourceVersion"] = self.next_rv()
            self.emit("pods", "MODIFIED", pod)

    def install_custom(self, group: str, plural: str) -> None:
        """The kind's CRD is installed: its lists answer (empty) instead of 404."""
        with self.lock:
            self.customs.setdefault((group, plural), {})

    def add_custom(self, obj: dict, plural: str | None = None) -> dict:
        """Create or replace a custom object (installing its kind), emitting ADDED or MODIFIED."""
        from webhook.admission.review import plural_of

        with self.lock:
            obj = copy.deepcopy(obj)
            group, plural = obj["apiVersion"].rpartition("/")[0], plural or plural_of(obj["kind"])
            meta = obj["metadata"]
            meta["resourceVersion"] = self.next_rv()
            objects = self.customs.setdefault((group, plural), {})
            key = (meta.get("namespace") or "", meta["name"])
            etype = "MODIFIED" if key in objects else "ADDED"
            objects[key] = obj
            self.emit(f"{group}/{plural}", etype, obj)
            return copy.deepcopy(obj)

    def edit_custom(self, group: str, plural: str, namespace: str, name: str, fn: Callable[[dict], None]) -> None:
        with self.lock:
            obj = self.customs[(group, plural)][(namespace, name)]
            fn(obj)
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self.emit(f"{group}/{plural}", "MODIFIED", obj)

    def delete_custom(self, group: str, plural: str, namespace: str, name: str) -> None:
        with self.lock:
            obj = self.customs[(group, plural)].pop((namespace, name))
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self.emit(f"{group}/{plural}", "DELETED", obj)

    def annotations(self, key: str) -> dict:
        with self.lock:
            return dict(self.pods[key]["metadata"].get("annotations") or {})

    def put_secret(self, secret: dict) -> dict:
        with self.lock:
            secret = copy.deepcopy(secret)
            meta = secret.setdefault("metadata", {})
            meta["resourceVersion"] = self.next_rv()
            self.secrets[(meta["namespace"], meta["name"])] = secret
            return copy.deepcopy(secret)

    def secret(self, ns: str, name: str) -> dict | None:
        with self.lock:
            found = self.secrets.get((ns, name))
            return copy.deepcopy(found) if found else None

    def put_hook(self, config: dict) -> None:
        with self.lock:
            config = copy.deepcopy(config)
            config["metadata"]["resourceVersion"] = self.next_rv()
            kind = "validating" if config["kind"].startswith("Validating") else "mutating"
            self.hooks[(kind, config["metadata"]["name"])] = config

    def hook(self, kind: str, name: str) -> dict:
        with self.lock:
            return copy.deepcopy(self.hooks[(kind, name)])

    # -- what the tests observe and script ------------------------------------------------------

    def calls(self, method: str, pattern: str = "") -> list[Call]:
        """The requests with this method whose path matches `pattern` (re.search)."""
        with self.lock:
            return [c for c in self.requests if c.method == method and re.search(pattern, c.path)]

    def count(self, method: str, prefix: str, **query: str) -> int:
        """How many requests had this method, a path starting with `prefix` and these query values."""
        with self.lock:
            return sum(1 for c in self.requests if c.method == method and c.path.startswith(prefix) and all(c.query.get(k) == v for k, v in query.items()))

    def hold_writes(self) -> None:
        """Pod PATCHes wait, unanswered, until `release_writes` (`writes_waiting` counts them): a
        test can change the cluster while the writes a client already sent are held."""
        self.writes_open.clear()

    def release_writes(self) -> None:
        self.writes_open.set()

    def fail(self, method: str, path_regex: str, status_code: int, reason: str, message: str, *, times: int | None = None) -> None:
        """Answer `method` requests whose path matches `path_regex` (re.search) with a failure Status,
        every time or only the first `times` times."""
        pattern = re.compile(path_regex)
        self.injected.append(_Injected(method, lambda p: bool(pattern.search(p)), status_code, status(status_code, reason, message), times=times))

    def fault(
        self, method: str, prefix: str, code: int, *, headers: dict | None = None, watch: bool | None = None, body: dict | None = None, times: int = 1
    ) -> None:
        """Answer the next `times` matching requests (path starting with `prefix`) with `code`."""
        self.injected.append(
            _Injected(method, lambda p: p.startswith(prefix), code, body or status(code, "Injected", "injected fault"), headers or {}, watch, times)
        )

    # -- answering ------------------------------------------------------------------------------

    def answer(self, call: Call, content_type: str, raw: bytes) -> Answer:
        method, path = call.method, call.path
        watching = call.query.get("watch") == "true"
        with self.lock:
            for i, (wanted, pattern, fn) in enumerate(self.before):
                if wanted == method and re.search(pattern, path):
                    del self.before[i]
                    scripted = fn(self)
                    if scripted is not None:
                        return scripted
                    break
            for f in self.injected:
                if (f.times is None or f.times > 0) and f.method == method and f.matches(path) and (f.watch is None or f.watch == watching):
                    if f.times is not None:
                        f.times -= 1
                    if f.code == 410 and watching:
                        return _Expired()
                    return f.code, f.body, f.headers
        payload = json.loads(raw) if raw else None
        if path in LISTS:
            kind = LISTS[path]
            if watching:
                since = int(call.query.get("resourceVersion") or 0)
                return _Expired() if since < self.compacted else _Watch(kind, since, int(call.query.get("timeoutSeconds") or 5))
            return self._list(kind, int(call.query.get("limit") or 0), call.query.get("continue"))
        if m := POD_RE.match(path):
            return self._pod(method, f"{m['ns']}/{m['name']}", m["name"], payload, content_type)
        if method == "GET" and (m := CONFIGMAP_RE.match(path)):
            found = self.configmaps.get((m["ns"], m["name"]))
            return (200, found) if found is not None else (404, status(404, "NotFound", f'configmaps "{m["name"]}" not found'))
        if m := SECRET_RE.match(path):
            return self._secret(method, m["ns"], m["name"], payload, content_type)
        if m := HOOK_RE.match(path):
            return self._hook(method, m["kind"], m["name"], payload, content_type)
        if m := LEASE_RE.match(path):
            return self._lease(method, m["ns"], m["name"], payload)
        if method == "POST" and (m := CREATE_RE.match(path)) and call.query.get("dryRun") == "All":
            return self._dry_run_create(m["resource"], payload, call.query)
        if (
            (m := CUSTOM_RE.match(path))
            and (m["group"], m["plural"]) in self.customs
            and (method in ("POST", "PUT", "DELETE") or "labelSelector" in call.query)
        ):
            return self._custom_write_or_select(method, m, payload, call.query)
        if method == "GET" and (m := CUSTOM_RE.match(path)) and (m["group"], m["plural"]) in self.customs:
            return self._custom(m["group"], m["version"], m["ns"] or "", m["plural"], m["name"], call.query)
        if method == "POST" and (m := CREATE_RE.match(path)):
            return self._dry_run_create(m["resource"], payload, call.query)
        if method == "GET" and path in ("/version", "/version/"):  # the official client asks for /version/
            return (200, self.version) if self.version is not None else (404, status(404, "NotFound", "the server could not find the requested resource"))
        if method == "GET" and (m := GROUP_VERSION_RE.match(path)):
            found = self.discovery.get(f"{m['group']}/{m['version']}")
            return (200, found) if found else (404, status(404, "NotFound", "the server could not find the requested resource"))
        return 404, status(404, "NotFound", f"the fake API does not serve {method} {path}")

    def _custom(self, group: str, version: str, ns: str, plural: str, name: str | None, query: dict[str, str]) -> Answer:
        kind = f"{group}/{plural}"
        with self.lock:
            objects = self.customs[(group, plural)]
            if name is not None:
                found = objects.get((ns, name))
                return (200, copy.deepcopy(found)) if found else (404, status(404, "NotFound", f'{kind} "{name}" not found'))
            if query.get("watch") == "true":
                since = int(query.get("resourceVersion") or 0)
                return _Expired() if since < self.compacted else _Watch(kind, since, int(query.get("timeoutSeconds") or 5), ns)
            listed = [o for (o_ns, _), o in objects.items() if not ns or o_ns == ns]
        return self._list(kind, int(query.get("limit") or 0), query.get("continue"), listed, f"{group}/{version}")

    # -- custom objects written by a client (audit's PolicyReports), and lists by label ----------

    def _custom_write_or_select(self, method: str, m: re.Match[str], body: Any, query: dict[str, str]) -> Answer:
        """`POST` (409 AlreadyExists), `PUT` with the resourceVersion precondition (409 Conflict),
        `DELETE`, and `GET` lists filtered by an equality `labelSelector` (k=v,...)."""
        group, plural, ns, name = m["group"], m["plural"], m["ns"] or "", m["name"]
        with self.lock:
            objects = self.customs[(group, plural)]
            if method == "GET":
                wanted = dict(part.split("=", 1) for part in query["labelSelector"].split(",") if part)
                listed = [
                    o
                    for (o_ns, _), o in objects.items()
                    if (not ns or o_ns == ns) and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
                ]
                return self._list(f"{group}/{plural}", int(query.get("limit") or 0), query.get("continue"), listed, f"{group}/{m['version']}")
            if method == "POST" and name is None:
                key = (ns, body["metadata"]["name"])
                if key in objects:
                    return 409, status(409, "AlreadyExists", f'{plural}.{group} "{key[1]}" already exists')
                body["metadata"]["namespace"] = ns
                body["metadata"]["uid"] = f"uid-{self.next_rv()}"
                return 201, self.add_custom(body, plural)
            current = objects.get((ns, name or ""))
            if current is None:
                return 404, status(404, "NotFound", f'{plural}.{group} "{name}" not found')
            if method == "PUT":
                if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                    return 409, status(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again")
                body["metadata"]["uid"] = current["metadata"].get("uid")
                return 200, self.add_custom(body, plural)
            if method == "DELETE":
                self.delete_custom(group, plural, ns, name or "")
                return 200, status(200, "Success", "deleted") | {"status": "Success"}
            return 405, status(405, "MethodNotAllowed", method)

    def _list(self, kind: str, limit: int, token: str | None, source: Iterable[dict] | None = None, api_version: str = "v1") -> Answer:
        """A list, or one page of it: the first page snapshots the items, the next ones read on."""
        with self.lock:
            if token:
                if token not in self._pages:
                    return 410, status(410, "Expired", "the provided continue parameter is too old")
                rv, items = self._pages.pop(token)
            else:
                if source is None:
                    source = (self.nodes if kind == "nodes" else self.pods).values()
                rv, items = str(self.rv), [copy.deepcopy(o) for o in source]
            meta: dict[str, Any] = {"resourceVersion": rv}
            if limit > 0 and len(items) > limit:
                items, rest = items[:limit], items[limit:]
                meta["continue"] = f"{rv}-{next(self._page_ids)}"
                self._pages[meta["continue"]] = (rv, rest)
            return 200, {"kind": "List", "apiVersion": api_version, "metadata": meta, "items": items}

    def _pod(self, method: str, key: str, name: str, ops: Any, content_type: str) -> Answer:
        if method == "GET":
            with self.lock:
                pod = copy.deepcopy(self.pods.get(key))
            return (200, pod) if pod else (404, status(404, "NotFound", f'pods "{name}" not found'))
        if method != "PATCH":
            return 405, status(405, "MethodNotAllowed", method)
        if content_type != JSON_PATCH:
            return 415, status(415, "UnsupportedMediaType", "want json patch")
        if self.before_patch:
            hook, self.before_patch = self.before_patch, None
            hook(key)
        if not self.writes_open.is_set():
            with self.lock:
                self.writes_waiting += 1
            self.writes_open.wait()
            with self.lock:
                self.writes_waiting -= 1
        if self.write_latency:
            time.sleep(self.write_latency)  # outside the lock: writes overlap, as on a real server
        with self.lock:
            pod = self.pods.get(key)
            if pod is None:
                return 404, status(404, "NotFound", f"pod {key} not found")
            try:
                patched = jsonpatch.apply_patch(pod, ops)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                return 422, status(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}")
            patched["metadata"]["resourceVersion"] = self.next_rv()
            self.pods[key] = patched
            self.patches.append((key, ops))
            self.patch_times.append(time.monotonic())
            self.emit("pods", "MODIFIED", patched)
            return 200, copy.deepcopy(patched)

    def _secret(self, method: str, ns: str, name: str | None, payload: Any, content_type: str) -> Answer:
        with self.lock:
            if method == "POST" and name is None:
                key = (ns, payload["metadata"]["name"])
                if key in self.secrets:
                    return 409, status(409, "AlreadyExists", f'secrets "{key[1]}" already exists')
                payload["metadata"]["namespace"] = ns
                return 201, self.put_secret(payload)
            current = self.secrets.get((ns, name or ""))
            if current is None:
                return 404, status(404, "NotFound", f'secrets "{name}" not found')
            if method == "GET":
                return 200, copy.deepcopy(current)
            if method == "PATCH":
                if content_type != MERGE_PATCH:
                    return 415, status(415, "UnsupportedMediaType", "expected a merge patch")
                wanted = (payload.get("metadata") or {}).get("resourceVersion")
                if wanted and wanted != current["metadata"]["resourceVersion"]:
                    return 409, status(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again")
                return 200, self.put_secret(merge_patch(current, payload))
            return 405, status(405, "MethodNotAllowed", method)

    def _hook(self, method: str, kind: str, name: str, payload: Any, content_type: str) -> Answer:
        with self.lock:
            current = self.hooks.get((kind, name))
            if current is None:
                return 404, status(404, "NotFound", f'{kind}webhookconfigurations "{name}" not found')
            if method == "GET":
                return 200, copy.deepcopy(current)
            if method == "PATCH":
                if content_type != STRATEGIC_MERGE_PATCH:
                    return 415, status(415, "UnsupportedMediaType", "expected a strategic merge patch")
                wanted = (payload.get("metadata") or {}).get("resourceVersion")
                if wanted and wanted != current["metadata"]["resourceVersion"]:
                    return 409, status(409, "Conflict", "the object has been modified")
                updated = strategic_merge_webhooks(current, payload)
                updated["metadata"]["resourceVersion"] = self.next_rv()
                self.hooks[(kind, name)] = updated
                return 200, copy.deepcopy(updated)
            return 405, status(405, "MethodNotAllowed", method)

    def _lease(self, method: str, ns: str, name: str | None, body: Any) -> Answer:
        with self.lock:
            if method == "POST" and name is None:
                name = body["metadata"]["name"]
                if name in self.leases:
                    return 409, status(409, "AlreadyExists", "exists")
                body["metadata"].update(namespace=ns, resourceVersion=self.next_rv())
                self.leases[name] = body
                return 201, body
            if name not in self.leases:
                return 404, status(404, "NotFound", "lease not found")
            if method == "GET":
                return 200, self.leases[name]
            if method == "PUT":
                if body["metadata"].get("resourceVersion") != self.leases[name]["metadata"]["resourceVersion"]:
                    return 409, status(409, "Conflict", "the object has been modified")
                body["metadata"]["resourceVersion"] = self.next_rv()
                self.leases[name] = body
                return 200, body
            return 405, status(405, "MethodNotAllowed", method)

    def _dry_run_create(self, resource: str, obj: Any, query: dict) -> Answer:
        """A dry-run create: defaulting (a pod's schedulerName), the mutating webhooks in order with
        their JSON Patches applied, then the validating ones; the first refusal answers."""
        if query.get("dryRun") != "All":
            return 405, status(405, "MethodNotAllowed", "the fake API only serves dry-run creates")
        if resource == "modelservings" and not self.modelservings_served:
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        obj = copy.deepcopy(obj)
        if resource == "pods":
            obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
        for name, webhook in self.mutating_webhooks + self.validating_webhooks:
            response = webhook(copy.deepcopy(obj))
            if response is None:
                continue
            if not response.get("allowed"):
                refusal = response.get("status") or {}
                code = int(refusal.get("code") or 400)
                message = f'admission webhook "{name}" denied the request: {refusal.get("message", "")}'
                return code, status(code, str(refusal.get("reason") or "BadRequest"), message)
            if response.get("patch"):
                obj = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
        return 201, obj


def _pod_key(pod: dict) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a reconciler stopped mid-request) is not the fake's error."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 like kube-apiserver: every plain answer has a Content-Length, and a watch is a
    chunked stream with one event per chunk, so the client sees each event as it is sent (a
    close-delimited stream would only reach the client's line reader when the watch ends)."""

    api: FakeAPI
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed ACK (40 ms a request on Linux), which no real API server makes anyone wait
    disable_nagle_algorithm = True
    call: Call

    def log_message(self, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        content_type = self.headers.get("Content-Type", "")
        self.call = Call(self.command, url.path, query, content_type)
        with self.api.lock:
            self.api.requests.append(self.call)
        # Read the body first, even for an injected answer: on a kept-alive connection an unread
        # body would be parsed as the next request.
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        answer = self.api.answer(self.call, content_type, raw)
        if isinstance(answer, _Watch):
            self._watch(answer)
        elif isinstance(answer, _Expired):
            self._expired()
        else:
            code, body, *rest = answer
            self._send(code, body, rest[0] if rest else None)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _status_line(self, code: int) -> None:
        self.call.status = code
        self.send_response(code)

    def _send(self, code: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self._status_line(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self._status_line(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _expired(self) -> None:
        self._start_stream()
        event = {"type": "ERROR", "object": status(410, "Expired", "too old resource version")}
        self._chunk(json.dumps(event).encode() + b"\n")
        self._chunk(b"")

    def _watch(self, w: _Watch) -> None:
        api = self.api
        self._start_stream()
        deadline = time.monotonic() + min(w.timeout, 2)
        sent = w.since
        generation = api.watch_generation
        while time.monotonic() < deadline and api.watch_generation == generation:
            with api.lock:
                # history is in resourceVersion order: start after the last one looked at, of any kind
                tail = api.history[bisect.bisect_right(api.history, sent, key=lambda e: e[0]) :]
                if not tail:
                    api.lock.wait(0.05)  # end_watches() notifies
                    continue
                pending = [(t, o) for _, k, t, o in tail if k == w.kind and (not w.namespace or o["metadata"].get("namespace") == w.namespace)]
            for t, o in pending:
                try:
                    self._chunk(json.dumps({"type": t, "object": o}).encode() + b"\n")
                except OSError:
                    return
            sent = tail[-1][0]
        try:
            self._chunk(b"")  # the server ends the watch at its timeout, as timeoutSeconds asks
        except OSError:
            pass
