"""A small fake API server for the self-managed certificate tests: Secrets (get, create, merge
patch with a resourceVersion precondition) and webhook configurations (get, strategic merge
patch of `webhooks` by name). The official client talks to it over real HTTP."""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

REPO = Path(__file__).resolve().parents[2]

SECRET_RE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/secrets(?:/(?P<name>[^/]+))?$")
HOOK_RE = re.compile(r"^/apis/admissionregistration\.k8s\.io/v1/(?P<kind>validating|mutating)webhookconfigurations/(?P<name>[^/]+)$")


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
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


class FakeAPI:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.rv = 100
        self.secrets: dict[tuple[str, str], dict] = {}
        self.hooks: dict[tuple[str, str], dict] = {}
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status)
        # Scripted interference, run under the lock before a request is handled:
        # (method, path regex) -> callable(api) returning None or a (status, body) answer.
        self.before: list[tuple[str, str, Callable[["FakeAPI"], tuple[int, dict] | None]]] = []

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def put_secret(self, secret: dict) -> dict:
        with self.lock:
            secret = copy.deepcopy(secret)
            meta = secret.setdefault("metadata", {})
            meta["resourceVersion"] = self.next_rv()
            self.secrets[(meta["namespace"], meta["name"])] = secret
            return copy.deepcopy(secret)

    def put_hook(self, config: dict) -> None:
        with self.lock:
            config = copy.deepcopy(config)
            config["metadata"]["resourceVersion"] = self.next_rv()
            kind = "validating" if config["kind"].startswith("Validating") else "mutating"
            self.hooks[(kind, config["metadata"]["name"])] = config

    def hook(self, kind: str, name: str) -> dict:
        with self.lock:
            return copy.deepcopy(self.hooks[(kind, name)])

    def secret(self, ns: str, name: str) -> dict | None:
        with self.lock:
            found = self.secrets.get((ns, name))
            return copy.deepcopy(found) if found else None

    def calls(self, method: str, pattern: str = "") -> list[tuple[str, str, int]]:
        return [r for r in self.requests if r[0] == method and re.search(pattern, r[1])]

    # request handling -------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, dict]:
        with self.lock:
            for i, (m, pattern, fn) in enumerate(list(self.before)):
                if m == method and re.search(pattern, path):
                    del self.before[i]
                    answer = fn(self)
                    if answer is not None:
                        return answer
                    break
            payload = json.loads(body) if body else None
            m = SECRET_RE.match(path)
            if m:
                return self._secret(method, m["ns"], m["name"], payload, headers)
            m = HOOK_RE.match(path)
            if m:
                return self._hook(method, m["kind"], m["name"], payload, headers)
            return 404, status(404, "NotFound", f"the fake API does not serve {method} {path}")

    def _secret(self, method: str, ns: str, name: str | None, payload: Any, headers: Any) -> tuple[int, dict]:
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
            if headers.get("Content-Type") != "application/merge-patch+json":
                return 415, status(415, "UnsupportedMediaType", "expected a merge patch")
            wanted = (payload.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                return 409, status(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again")
            return 200, self.put_secret(merge_patch(current, payload))
        return 405, status(405, "MethodNotAllowed", method)

    def _hook(self, method: str, kind: str, name: str, payload: Any, headers: Any) -> tuple[int, dict]:
        current = self.hooks.get((kind, name))
        if current is None:
            return 404, status(404, "NotFound", f'{kind}webhookconfigurations "{name}" not found')
        if method == "GET":
            return 200, copy.deepcopy(current)
        if method == "PATCH":
            if headers.get("Content-Type") != "application/strategic-merge-patch+json":
                return 415, status(415, "UnsupportedMediaType", "expected a strategic merge patch")
            wanted = (payload.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                return 409, status(409, "Conflict", "the object has been modified")
            updated = strategic_merge_webhooks(current, payload)
            updated["metadata"]["resourceVersion"] = self.next_rv()
            self.hooks[(kind, name)] = updated
            return 200, copy.deepcopy(updated)
        return 405, status(405, "MethodNotAllowed", method)


def _handler(api: FakeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            code, answer = api.handle(self.command, path, self.headers, body)
            with api.lock:
                api.requests.append((self.command, path, code))
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def fake_api():
    api = FakeAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    conf = client.Configuration()
    conf.host = f"http://127.0.0.1:{server.server_address[1]}"
    api.client_configuration = conf
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def api_client(fake_api):
    c = client.ApiClient(fake_api.client_configuration)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def committed_configurations() -> list[dict]:
    text = (REPO / "manifests" / "base" / "webhook-configurations.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


# ---- a small kustomize, for the features our kustomizations use ---------------------------------
#
# `resources` (files and directories), `patches` with an inline JSON 6902 patch and a `target`
# (kind, name), and inline strategic-merge patches whose only job is `$patch: delete`. Anything
# else in a kustomization.yaml is refused, so a new feature cannot slip past the tests. When
# kubectl is installed, a test checks that this renders the same objects as `kubectl kustomize`.

import jsonpatch  # noqa: E402

SUPPORTED_KUSTOMIZATION_KEYS = {"apiVersion", "kind", "resources", "patches"}


def _key(doc: dict) -> tuple[str, str, str, str]:
    meta = doc.get("metadata") or {}
    return (doc.get("apiVersion", ""), doc.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))


def kustomize(directory: Path) -> list[dict]:
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(spec) - SUPPORTED_KUSTOMIZATION_KEYS
    if unknown:
        raise ValueError(f"{directory}/kustomization.yaml uses {sorted(unknown)}, which the test renderer does not support")
    docs: list[dict] = []
    for entry in spec.get("resources") or ():
        path = (directory / entry).resolve()
        if path.is_dir():
            docs.extend(kustomize(path))
        else:
            docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    for patch in spec.get("patches") or ():
        if set(patch) - {"patch", "target"}:
            raise ValueError(f"unsupported patch fields {sorted(set(patch) - {'patch', 'target'})}")
        body = yaml.safe_load(patch["patch"])
        if isinstance(body, list):
            target = patch["target"]
            hits = [d for d in docs if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]]
            if len(hits) != 1:
                raise ValueError(f"patch target {target} matched {len(hits)} objects")
            patched = jsonpatch.apply_patch(hits[0], body)
            docs[docs.index(hits[0])] = patched
        elif isinstance(body, dict) and body.get("$patch") == "delete" and set(body) == {"$patch", "apiVersion", "kind", "metadata"}:
            key = _key(body)
            hits = [d for d in docs if _key(d) == key]
            if len(hits) != 1:
                raise ValueError(f"delete patch {key} matched {len(hits)} objects")
            docs.remove(hits[0])
        else:
            raise ValueError(f"unsupported patch: {patch['patch'][:80]}")
    keys = [_key(d) for d in docs]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise ValueError(f"duplicate objects {sorted(duplicates)}")
    return docs


MANIFESTS = REPO / "manifests"
VARIANTS = {"base": MANIFESTS, "cert-manager": MANIFESTS / "overlays" / "cert-manager"}


@pytest.fixture(params=sorted(VARIANTS))
def variant(request) -> tuple[str, list[dict]]:
    return request.param, kustomize(VARIANTS[request.param])


@pytest.fixture
def base_docs() -> list[dict]:
    return kustomize(VARIANTS["base"])


@pytest.fixture
def overlay_docs() -> list[dict]:
    return kustomize(VARIANTS["cert-manager"])


def find(docs: list[dict], kind: str, name: str) -> dict:
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, f"{kind} {name}: {len(hits)} objects"
    return hits[0]


@pytest.fixture
def find_doc():
    return find
