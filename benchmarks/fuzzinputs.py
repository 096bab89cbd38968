"""The input classes of `fuzz.py --mode mixed` (issue 19): what a broken or hostile client sends
besides a review with odd field values. Each class builds one `Probe` from a seeded generator;
the large ones (a body near the size limit, a multi-MiB string) are drawn rarely, so a run of
60,000 probes moves a few GB, not hundreds.
"""

from __future__ import annotations

import json
import random
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

LIMIT = 7 * 1024 * 1024  # the server's default --max-body-bytes


@dataclass
class Probe:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    chunked: bool = False
    cut: int | None = None  # send only this many body bytes of the announced length, then hang up
    kind: str = field(default="review")


def _json(path: str, body: bytes, kind: str, **extra: object) -> Probe:
    return Probe("POST", path, {"Content-Type": "application/json"}, body, kind=kind, **extra)  # type: ignore[arg-type]


def _review(rng: random.Random, reviews: list[tuple[str, dict]]) -> tuple[str, dict]:
    name, doc = rng.choice(reviews)
    return ("/mutate" if name.endswith("-mutating") else "/validate"), json.loads(json.dumps(doc))


def _labels(doc: dict) -> dict:
    obj = doc["request"].get("object") or doc["request"].get("oldObject") or {}
    return obj.setdefault("metadata", {}).setdefault("labels", {}) if isinstance(obj, dict) else {}


def random_bytes(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    return _json(rng.choice(["/mutate", "/validate"]), rng.randbytes(rng.randrange(4096)), "random-bytes")


def truncated_json(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    body = json.dumps(doc).encode()
    return _json(path, body[: rng.randrange(1, len(body))], "truncated-json")


def cut_off(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    body = json.dumps(doc).encode()
    return _json(path, body, "cut-off", cut=rng.randrange(len(body)))


def wrong_method(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    method = rng.choice(["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "POST"])
    path = rng.choice(
        [
            "/mutate",
            "/validate",
            "/healthz",
            "/readyz",
            "/",
            "/mutate/",
            "/x" * rng.randrange(1, 300),
            f"/{rng.randrange(10**12)}",
            "/mutate?" + "a=b&" * rng.randrange(200),
        ]
    )
    body = b"" if method in ("GET", "HEAD") else json.dumps(_review(rng, reviews)[1]).encode()
    if method == "POST" and path in ("/mutate", "/validate"):
        path = "/nowhere"
    return Probe(method, path, {"Content-Type": "application/json"}, body, kind="wrong-method")


def wrong_content_type(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    ctype = rng.choice(
        [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
            "application/yaml",
            "application/json-patch+json",
            "application/jsonx",
            "*/*",
            "application/json; charset=" + "x" * rng.randrange(2000),
            "\u00e9/\u00e9",
        ]
    )
    headers = {"Content-Type": ctype} if ctype else {}
    return Probe("POST", path, headers, json.dumps(doc).encode(), kind="content-type")


def chunked(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    if rng.random() < 0.05:
        _labels(doc)["pad"] = "p" * (LIMIT + rng.randrange(1024))
    return _json(path, json.dumps(doc).encode(), "chunked", chunked=True)


def large_body(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    size = rng.choice([LIMIT - 4096, LIMIT + 1, 2 * LIMIT + 10, rng.randrange(1 << 20, LIMIT)])
    doc["padding"] = "x" * size
    return _json(path, json.dumps(doc).encode(), "large-body")


def deep(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    depth = rng.choice([200, 1000, 5000, 100_000])
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    nested = opener * depth + "1" + closer * depth
    text = json.dumps(doc)
    body = text.replace('"labels": {', '"labels": {"deep": ' + nested + ", ", 1) if '"labels": {' in text else text[:-1] + ', "deep": ' + nested + "}"
    return _json(path, body.encode(), "deep")


def big_string(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    size = rng.choice([64 << 10, 1 << 20, 3 << 20])
    where = rng.choice(["label", "uid", "username", "kind"])
    value = rng.choice("aé€") * (size // 3)
    if where == "label":
        _labels(doc)["big"] = value
    elif where == "uid":
        doc["request"]["uid"] = value
    elif where == "username":
        doc["request"].setdefault("userInfo", {})["username"] = value
    else:
        doc["request"]["kind"]["kind"] = value
    return _json(path, json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode(), "big-string")


def many_keys(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    n = rng.choice([1000, 20_000, 100_000])
    _labels(doc).update({f"k{i}-{rng.randrange(10**6)}": str(i) for i in range(n)})
    return _json(path, json.dumps(doc).encode(), "many-keys")


def bad_utf8(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    path, doc = _review(rng, reviews)
    _labels(doc)["marker"] = "MARK"
    junk = rng.choice([b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80" * 50, rng.randbytes(16)])
    body = json.dumps(doc).encode().replace(b"MARK", junk, 1)
    if rng.random() < 0.3:
        body = body.replace(b'"MARK"', b'"\\ud800"', 1)
    return _json(path, body, "bad-utf8")


# (class, weight): the multi-MiB classes are rare.
CLASSES: list[tuple[Callable[[random.Random, list[tuple[str, dict]]], Probe], int]] = [
    (random_bytes, 10),
    (truncated_json, 10),
    (cut_off, 4),
    (wrong_method, 10),
    (wrong_content_type, 10),
    (chunked, 6),
    (deep, 6),
    (many_keys, 3),
    (bad_utf8, 10),
    (big_string, 2),
    (large_body, 1),
]


def mixed_probe(rng: random.Random, reviews: list[tuple[str, dict]]) -> Probe:
    fn = rng.choices([c for c, _ in CLASSES], weights=[w for _, w in CLASSES])[0]
    return fn(rng, reviews)


def send_cut(port: int, ctx: ssl.SSLContext, probe: Probe) -> None:
    """Announce the whole body, send `probe.cut` bytes of it, hang up."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
            head = f"{probe.method} {probe.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(probe.body)}\r\n\r\n"
            tls.sendall(head.encode() + probe.body[: probe.cut or 0])
    except OSError:
        pass
