"""Reading the raw answers of calls made with `_preload_content=False`.

The package turns preloading off on every call whose answer it reads: building the client's
model objects costs more than the work done with them, and the pure code (rotation, scoring)
reads plain dicts. The client's annotations still promise a model object for those calls, while
what comes back is the urllib3 response; `json_body` is the one place that knows it.
"""

from __future__ import annotations

from typing import Any

import orjson


def json_body(response: object) -> Any:
    """The decoded JSON body of a response obtained with `_preload_content=False`."""
    data: bytes = getattr(response, "data")
    return orjson.loads(data)
