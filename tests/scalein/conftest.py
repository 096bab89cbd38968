"""Fixtures for the scale-in tests: the real cluster snapshots, and a small fake API server that
speaks the paths the reconciler uses (list, watch, patch, read, leases, discovery), so the
official client is exercised for real over HTTP."""

from __future__ import annotations

import copy
import json
import os
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonpatch
import pytest
from kubernetes import client

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SERVINGGATE_SHARED", REPO.parent / "shared")).resolve()
CLUSTER = SHARED / "fixtures" / "cluster"


def _load(name: str) -> dict:
    return json.loads((CLUSTER / name).read_text())


@pytest.fixture
def s1() -> dict:
    return _load("S1-compaction.json")


@pytest.fixture
def s2() -> dict:
    return _load("S2-modelserving-groups.json")


@pytest.fixture
def s1_path() -> Path:
    return CLUSTER / "S1-compaction.json"


@pytest.fixture
def s2_path() -> Path:
    return CLUSTER / "S2-modelserving-groups.json"


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


class FakeAPI:
    """State and behaviour of the fake control plane. `faults` holds scripted answers:
    (method, path-prefix, predicate on query) -> (status, headers, body) used once each."""

    def __init__(self, nodes: list[dict], pods: list[dict]):
        self.lock = threading.Condition()
        self.rv = 1000
        self.nodes = {n["metadata"]["name"]: copy.deepcopy(n) for n in nodes}
        self.pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": copy.deepcopy(p) for p in pods}
        for obj in list(self.nodes.values()) + list(self.pods.values()):
            obj["metadata"]["resourceVersion"] = self._next()
        self.history: list[tuple[int, str, str, dict]] = []  # (rv, kind, type, obj)
        self.compacted = 0  # watches from below this rv get 410
        self.leases: dict[str, dict] = {}
        self.discovery: dict[str, dict] = {}
        self.faults: list[dict] = []
        self.requests: list[tuple[str, str, dict, str]] = []  # (method, path, query, content-type)
        self.patches: list[tuple[str, list]] = []  # accepted patches (pod key, ops)
        self.before_patch = None  # hook(key, pod) run before a patch is applied

    def _next(self) -> str:
        self.rv += 1
        return str(self.rv)

    def emit(self, kind: str, etype: str, obj: dict) -> None:
        with self.lock:
            self.history.append((int(obj["metadata"]["resourceVersion"]), kind, etype, copy.deepcopy(obj)))
            self.lock.notify_all()

    # -- helpers for tests ---------------------------------------------------------------------

    def add_pod(self, pod: dict) -> None:
        with self.lock:
            pod = copy.deepcopy(pod)
            pod["metadata"]["resourceVersion"] = self._next()
            self.pods[f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"] = pod
        self.emit("pods", "ADDED", pod)

    def delete_pod(self, key: str) -> None:
        with self.lock:
            pod = self.pods.pop(key)
            pod["metadata"]["resourceVersion"] = self._next()
        self.emit("pods", "DELETED", pod)

    def edit_pod(self, key: str, fn) -> None:
        with self.lock:
            pod = self.pods[key]
            fn(pod)
            pod["metadata"]["resourceVersion"] = self._next()
        self.emit("pods", "MODIFIED", pod)

    def annotations(self, key: str) -> dict:
        with self.lock:
            return dict(self.pods[key]["metadata"].get("annotations") or {})

    def count(self, method: str, prefix: str, **query) -> int:
        return sum(1 for m, p, q, _ in list(self.requests) if m == method and p.startswith(prefix)
                   and all(q.get(k) == v for k, v in query.items()))

    def fault(self, method: str, prefix: str, code: int, *, headers: dict | None = None, watch: bool | None = None,
              body: dict | None = None, times: int = 1) -> None:
        self.faults.append({"method": method, "prefix": prefix, "code": code, "headers": headers or {}, "watch": watch,
                            "body": body, "times": times})


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 like kube-apiserver: every plain answer has a Content-Length, and a watch is a
    chunked stream with one event per chunk, so the client sees each event as it is sent (a
    close-delimited stream would only reach the client's line reader when the watch ends)."""

    api: FakeAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _send(self, code: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str) -> None:
        api = self.api
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        path = url.path
        api.requests.append((method, path, query, self.headers.get("Content-Type", "")))
        # Read the body first, even for an injected fault: on a kept-alive connection an unread
        # body would be parsed as the next request.
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        for f in api.faults:
            if f["times"] > 0 and f["method"] == method and path.startswith(f["prefix"]) and (
                    f["watch"] is None or f["watch"] == (query.get("watch") == "true")):
                f["times"] -= 1
                if f["code"] == 410 and query.get("watch") == "true":
                    return self._stream_error_410()
                return self._send(f["code"], f["body"] or status(f["code"], "Injected", "injected fault"), f["headers"])
        if path in ("/api/v1/nodes", "/api/v1/pods"):
            kind = path.rsplit("/", 1)[1]
            if query.get("watch") == "true":
                return self._watch(kind, int(query.get("resourceVersion") or 0), int(query.get("timeoutSeconds") or 5))
            with api.lock:
                items = [copy.deepcopy(o) for o in (api.nodes if kind == "nodes" else api.pods).values()]
                rv = str(api.rv)
            return self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": items})
        parts = path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 6 and parts[4] == "pods":
            key = f"{parts[3]}/{parts[5]}"
            if method == "GET":
                with api.lock:
                    pod = copy.deepcopy(api.pods.get(key))
                return self._send(200, pod) if pod else self._send(404, status(404, "NotFound", f'pods "{parts[5]}" not found'))
            if method == "PATCH":
                return self._patch(key, raw)
        if parts[:2] == ["apis", "coordination.k8s.io"]:
            return self._lease(method, parts, raw)
        if len(parts) == 3 and parts[0] == "apis":
            found = api.discovery.get(f"{parts[1]}/{parts[2]}")
            return self._send(200, found) if found else self._send(404, status(404, "NotFound", "the server could not find the requested resource"))
        return self._send(404, status(404, "NotFound", path))

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream_error_410(self) -> None:
        self._start_stream()
        event = {"type": "ERROR", "object": status(410, "Expired", "too old resource version")}
        self._chunk(json.dumps(event).encode() + b"\n")
        self._chunk(b"")

    def _watch(self, kind: str, since: int, timeout: int) -> None:
        api = self.api
        if since < api.compacted:
            return self._stream_error_410()
        self._start_stream()
        deadline = time.monotonic() + min(timeout, 2)
        sent = since
        while time.monotonic() < deadline:
            with api.lock:
                pending = [(rv, t, o) for rv, k, t, o in api.history if k == kind and rv > sent]
                if not pending:
                    api.lock.wait(0.05)
                    continue
            for rv, t, o in pending:
                try:
                    self._chunk(json.dumps({"type": t, "object": o}).encode() + b"\n")
                except OSError:
                    return
                sent = rv
        try:
            self._chunk(b"")  # the server ends the watch at its timeout, as timeoutSeconds asks
        except OSError:
            pass

    def _patch(self, key: str, raw: bytes) -> None:
        api = self.api
        if self.headers.get("Content-Type") != "application/json-patch+json":
            return self._send(415, status(415, "UnsupportedMediaType", "want json patch"))
        ops = json.loads(raw)
        if api.before_patch:
            hook, api.before_patch = api.before_patch, None
            hook(key)
        with api.lock:
            pod = api.pods.get(key)
            if pod is None:
                return self._send(404, status(404, "NotFound", f"pod {key} not found"))
            try:
                patched = jsonpatch.apply_patch(pod, ops)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                return self._send(422, status(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"))
            patched["metadata"]["resourceVersion"] = api._next()
            api.pods[key] = patched
            api.patches.append((key, ops))
        api.emit("pods", "MODIFIED", patched)
        return self._send(200, patched)

    def _lease(self, method: str, parts: list[str], raw: bytes) -> None:
        api = self.api
        ns = parts[4]
        with api.lock:
            if method == "POST":
                body = json.loads(raw)
                name = body["metadata"]["name"]
                if name in api.leases:
                    return self._send(409, status(409, "AlreadyExists", "exists"))
                body["metadata"].update(namespace=ns, resourceVersion=api._next())
                api.leases[name] = body
                return self._send(201, body)
            name = parts[6]
            if name not in api.leases:
                return self._send(404, status(404, "NotFound", "lease not found"))
            if method == "GET":
                return self._send(200, api.leases[name])
            if method == "PUT":
                body = json.loads(raw)
                if body["metadata"].get("resourceVersion") != api.leases[name]["metadata"]["resourceVersion"]:
                    return self._send(409, status(409, "Conflict", "the object has been modified"))
                body["metadata"]["resourceVersion"] = api._next()
                api.leases[name] = body
                return self._send(200, body)
        return self._send(405, status(405, "MethodNotAllowed", method))

    def do_GET(self):  # noqa: N802
        self._route("GET")

    def do_POST(self):  # noqa: N802
        self._route("POST")

    def do_PUT(self):  # noqa: N802
        self._route("PUT")

    def do_PATCH(self):  # noqa: N802
        self._route("PATCH")


@pytest.fixture
def fake_api():
    """factory(nodes, pods) -> (FakeAPI, kubernetes ApiClient pointed at it)."""
    servers = []

    def make(nodes: list[dict], pods: list[dict]):
        api = FakeAPI(nodes, pods)
        handler = type("BoundHandler", (Handler,), {"api": api})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        conf = client.Configuration()
        conf.host = f"http://127.0.0.1:{server.server_address[1]}"
        return api, client.ApiClient(conf)

    yield make
    for s in servers:
        s.shutdown()
        s.server_close()


def wait_for(pred, timeout: float = 20.0, what: str = "condition"):
    """Poll until pred() is truthy (a deadline only against hangs; no timing is asserted)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def waiter():
    return wait_for
