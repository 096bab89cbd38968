"""AdmissionReview request parsing: bytes in, a typed, checked `Request` out.

Two failure channels, as in kopf's `_serve`: a review too broken to answer (not JSON, no
`request`, no `uid`, an apiVersion we do not speak) raises `ReviewError` without a uid and the
HTTP layer answers 4xx; a review that carries a uid but is malformed elsewhere raises
`ReviewError` with the uid, and is answered as a denied review (HTTP 200, code 400) so the API
server shows the user why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

SUPPORTED_API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
# Deepest JSON nesting a review may carry. Kubernetes objects nest about 15 levels (a pod in a
# ModelServing role template about 20); Python's own recursion limit is near 1,000, and the JSON
# parser stops at 1,024. Checked once, before any rule runs, so no rule, log line or error
# message ever handles a value deep enough to exhaust the interpreter's stack.
MAX_NESTING = 100
# A uid is a UUID (36 characters); a longer one is not from an API server, and it is echoed.
MAX_UID_LENGTH = 128
_TOO_DEEP = b"\n" + b" " * (2 * MAX_NESTING)
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


class ReviewError(Exception):
    """The review itself is unusable. `uid`/`api_version` are set when a review answer is possible."""

    def __init__(self, code: int, message: str, *, uid: str | None = None, api_version: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.uid = uid
        self.api_version = api_version


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    group: str
    version: str
    resource: str


@dataclass(frozen=True, slots=True)
class Request:
    """One admission request. `object`/`old_object` are the raw dicts from the wire (never re-encoded)."""

    uid: str
    api_version: str
    kind: GroupVersionKind
    resource: GroupVersionResource
    sub_resource: str
    operation: str
    name: str
    namespace: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool = False
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    user_info: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] | None = None

    @property
    def subject(self) -> dict[str, Any] | None:
        """The object a rule judges: the new one, or on DELETE the one being deleted."""
        return self.old_object if self.operation == "DELETE" else self.object

    @property
    def display_name(self) -> str:
        """`namespace/name` for logs; the generateName prefix stands in for a missing name."""
        name = self.name
        if not name and isinstance(self.object, dict):
            meta = self.object.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            given, prefix = meta.get("name"), meta.get("generateName")
            name = given if isinstance(given, str) and given else (prefix if isinstance(prefix, str) else "") + "*"
        return f"{self.namespace}/{name}" if self.namespace else name


def too_deep(value: Any) -> bool:
    """Whether `value` nests deeper than MAX_NESTING, in a few microseconds for a pod.

    Indented orjson output puts every nested value on a line indented two spaces per level,
    and a newline inside a JSON string is always escaped, so a line indented 2 * MAX_NESTING
    spaces exists exactly when some value is deeper; orjson itself refuses past 255 levels.
    """
    try:
        return _TOO_DEEP in orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as exc:
        if "ecursion" in str(exc):
            return True
    return _depth_walk(value) > MAX_NESTING  # not JSON-shaped (a YAML document in `check`): walk it


def _depth_walk(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > MAX_NESTING:
                break
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _strings(raw: Any, where: str, uid: str, api_version: str, keys: tuple[str, str, str]) -> tuple[str, str, str]:
    """The group, version and kind/resource of a GVK/GVR: strings (group and version may be
    empty or absent), the last one non-empty."""
    if not isinstance(raw, dict):
        raise ReviewError(400, f"{where}: must be an object", uid=uid, api_version=api_version)
    out: list[str] = []
    for key in keys:
        value = raw.get(key)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ReviewError(400, f"{where}.{key}: must be a string", uid=uid, api_version=api_version)
        out.append(value)
    if not out[2]:
        raise ReviewError(400, f"{where}.{keys[2]}: required (a non-empty string)", uid=uid, api_version=api_version)
    return out[0], out[1], out[2]


def _gvk(raw: Any, where: str, uid: str, api_version: str, *, required: bool) -> GroupVersionKind | None:
    if raw is None and not required:
        return None
    return GroupVersionKind(*_strings(raw, where, uid, api_version, ("group", "version", "kind")))


def _gvr(raw: Any, where: str, uid: str, api_version: str, *, required: bool) -> GroupVersionResource | None:
    if raw is None and not required:
        return None
    return GroupVersionResource(*_strings(raw, where, uid, api_version, ("group", "version", "resource")))


def _optional_str(req: dict[str, Any], key: str, uid: str, api_version: str) -> str:
    value = req.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewError(400, f"request.{key}: must be a string", uid=uid, api_version=api_version)
    return value


def _optional_obj(req: dict[str, Any], key: str, uid: str, api_version: str) -> dict[str, Any] | None:
    value = req.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise ReviewError(400, f"request.{key}: must be an object or null", uid=uid, api_version=api_version)


def decode(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ReviewError(400, f"body is not valid JSON: {exc}") from None


def parse_review(body: bytes | dict[str, Any]) -> Request:
    """Parse an AdmissionReview (bytes or an already decoded dict) into a `Request`."""
    doc = decode(body) if isinstance(body, (bytes, bytearray, memoryview)) else body
    if not isinstance(doc, dict):
        raise ReviewError(400, "body must be a JSON object (an AdmissionReview)")
    # Only shallow, type-checked reads before the nesting check: nothing here walks a value.
    api_version = doc.get("apiVersion")
    req = doc.get("request")
    uid = req.get("uid") if isinstance(req, dict) else None
    readable = isinstance(uid, str) and bool(uid) and isinstance(api_version, str) and api_version in SUPPORTED_API_VERSIONS
    if too_deep(doc):
        message = f"body: nested more than {MAX_NESTING} levels deep"
        if readable:
            raise ReviewError(400, message, uid=uid, api_version=api_version)
        raise ReviewError(400, message)
    if not isinstance(api_version, str) or api_version not in SUPPORTED_API_VERSIONS:
        raise ReviewError(400, f"apiVersion: unsupported value {orjson.dumps(api_version).decode()[:100]}; supported: {', '.join(SUPPORTED_API_VERSIONS)}")
    if doc.get("kind") != "AdmissionReview":
        raise ReviewError(400, f'kind: must be "AdmissionReview", got {orjson.dumps(doc.get("kind")).decode()[:100]}')
    if not isinstance(req, dict):
        raise ReviewError(400, "request: required (an AdmissionReview must carry a request object)")
    if not isinstance(uid, str) or not uid:
        raise ReviewError(400, "request.uid: required (a non-empty string)")
    if len(uid) > MAX_UID_LENGTH:
        raise ReviewError(400, f"request.uid: longer than {MAX_UID_LENGTH} characters")

    operation = req.get("operation")
    if operation not in OPERATIONS:
        raise ReviewError(
            400,
            f"request.operation: unsupported value {orjson.dumps(operation).decode()[:100]}; supported: {', '.join(OPERATIONS)}",
            uid=uid,
            api_version=api_version,
        )
    kind = _gvk(req.get("kind"), "request.kind", uid, api_version, required=True)
    resource = _gvr(req.get("resource"), "request.resource", uid, api_version, required=True)
    obj = _optional_obj(req, "object", uid, api_version)
    old = _optional_obj(req, "oldObject", uid, api_version)
    if operation in ("CREATE", "UPDATE") and obj is None:
        raise ReviewError(400, f"request.object: required for {operation}", uid=uid, api_version=api_version)
    if operation == "UPDATE" and old is None:
        raise ReviewError(400, "request.oldObject: required for UPDATE", uid=uid, api_version=api_version)
    user_info = req.get("userInfo")
    if user_info is None:
        user_info = {}
    if not isinstance(user_info, dict):
        raise ReviewError(400, "request.userInfo: must be an object", uid=uid, api_version=api_version)
    dry_run = req.get("dryRun")
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        raise ReviewError(400, "request.dryRun: must be a boolean", uid=uid, api_version=api_version)
    options = req.get("options")
    if options is not None and not isinstance(options, dict):
        raise ReviewError(400, "request.options: must be an object or null", uid=uid, api_version=api_version)
    assert kind is not None and resource is not None
    return Request(
        uid=uid,
        api_version=api_version,
        kind=kind,
        resource=resource,
        sub_resource=_optional_str(req, "subResource", uid, api_version),
        operation=operation,
        name=_optional_str(req, "name", uid, api_version),
        namespace=_optional_str(req, "namespace", uid, api_version),
        object=obj,
        old_object=old,
        dry_run=dry_run,
        request_kind=_gvk(req.get("requestKind"), "request.requestKind", uid, api_version, required=False),
        request_resource=_gvr(req.get("requestResource"), "request.requestResource", uid, api_version, required=False),
        user_info=user_info,
        options=options,
    )


def make_request(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    resource: tuple[str, str, str] | None = None,
    sub_resource: str = "",
    uid: str = "offline",
    dry_run: bool = False,
) -> Request:
    """Build a Request from a bare object (the `check` CLI and tests), inferring kind and resource."""
    subject = obj if obj is not None else old or {}
    api_version = str(subject.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    kind_name = str(subject.get("kind") or "")
    if resource is None:
        resource = (group, version, plural_of(kind_name))
    meta = subject.get("metadata") or {}
    return Request(
        uid=uid,
        api_version="admission.k8s.io/v1",
        kind=GroupVersionKind(group, version, kind_name),
        resource=GroupVersionResource(*resource),
        sub_resource=sub_resource,
        operation=operation,
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        object=obj,
        old_object=old,
        dry_run=dry_run,
    )


_IRREGULAR_PLURALS = {"Endpoints": "endpoints"}


def plural_of(kind: str) -> str:
    """Lower-case plural the way the API server names most resources (ModelServing -> modelservings)."""
    if kind in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[kind]
    low = kind.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and low[-2:-1] not in ("a", "e", "i", "o", "u"):
        return low[:-1] + "ies"
    return low + "s"
