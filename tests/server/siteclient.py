"""An in-process client of the Site (webhook/server/site.py) for tests that need no socket: the
request the worker's reader would give, through the seam the worker uses (`Site.answer`, a
`Later` resumed as a pool thread would), written by the one head writer and read back."""

from __future__ import annotations

import json
from typing import Any

from webhook.server.answers import whole
from webhook.server.http1 import HttpRequest
from webhook.server.site import Site
from webhook.serving.answer import settled


class Sent:
    """An answer as the client reads it off the wire."""

    def __init__(self, raw: bytes):
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status_code = int(lines[0].split()[1])
        self.headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        self.mimetype = self.headers.get("content-type", "").partition(";")[0].strip()

    def get_data(self, as_text: bool = False) -> Any:
        return self.body.decode() if as_text else self.body

    def get_json(self) -> Any:
        return json.loads(self.body)


class SiteClient:
    def __init__(self, site: Site):
        self.site = site

    def open(self, method: str, path: str, data: bytes | str = b"", content_type: str | None = None) -> Sent:
        body = data.encode() if isinstance(data, str) else data
        fields = [(b"Host", b"localhost"), (b"Content-Length", str(len(body)).encode())]
        if content_type is not None:
            fields.append((b"Content-Type", content_type.encode()))
        req = HttpRequest(method.encode(), path.encode(), (1, 1), fields, body, True, ("127.0.0.1", 50000), ("127.0.0.1", 8443))
        answer = settled(self.site.answer(req))
        return Sent(whole(answer, answer.closes, req.version, with_body=method != "HEAD"))

    def get(self, path: str) -> Sent:
        return self.open("GET", path)

    def post(self, path: str, data: bytes | str = b"", content_type: str | None = None) -> Sent:
        return self.open("POST", path, data, content_type)
