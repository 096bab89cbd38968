"""Reading the raw answers of calls made with `_preload_content=False`.

The package turns preloading off on every call whose answer it reads: building the client's
model objects costs more than the work done with them, and the pure code (rotation, scoring)
reads plain dicts. The client's annotations still promise a model object for those calls, while
what comes back is the urllib3 response; `json_body` and `watch_events` are the places that know it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import orjson
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines


def json_body(response: object) -> Any:
    """The decoded JSON body of a response obtained with `_preload_content=False`."""
    data: bytes = getattr(response, "data")  # noqa: B009 - typed `object`: urllib3 or a test double
    return orjson.loads(data)


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410 Gone as an ERROR event): list again."""


def watch_events(response: Any) -> Generator[tuple[str, dict[str, Any]], None, None]:
    """(type, object) of each event of a watch made with `_preload_content=False`, decoded
    straight from JSON; an ERROR event raises (WatchExpired for 410, else ApiException). The
    response is closed when the caller stops iterating, whether it read to the end or not."""
    try:
        for line in iter_resp_lines(response):
            if not line:
                continue
            event = orjson.loads(line)
            etype, obj = event.get("type"), event.get("object") or {}
            if etype == "ERROR":
                if obj.get("code") == 410:
                    raise WatchExpired(obj.get("message", ""))
                raise ApiException(status=obj.get("code") or 500, reason=f"watch error: {obj.get('reason')}: {obj.get('message')}")
            yield etype, obj
    finally:
        response.close()
        response.release_conn()
