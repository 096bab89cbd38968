"""The webhook server's one answer type. Whatever answers a request (a review, the Flask
application, the route table's 404 and 405, a refusal of the reader) gives an `Answer`, and the
worker writes it through the one head writer (webhook/server/answers.py).

`Later` is not an answer yet: what is left to do may wait (a lookup the watch-fed store cannot
answer, a large body, the Flask application), so the worker runs it in a thread, and `resume`
gives the answer there, from what was already read and parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

JSON = "application/json"


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole answer: status, body and its Content-Type (the head writer adds Content-Length),
    the application's other fields (no hop-by-hop ones), and `closes`: the application asked for
    the connection to be closed after it."""

    code: int
    body: bytes
    content_type: str = JSON
    fields: tuple[tuple[str, str], ...] = ()
    closes: bool = False


@dataclass(frozen=True, slots=True)
class Later:
    """The rest of a request's handling, which may wait: `resume()`, in a thread, gives its answer."""

    resume: Callable[[], Answer]


def settled(result: Answer | Later) -> Answer:
    """The answer, resuming here what was left for later (for a caller already allowed to wait)."""
    return result.resume() if isinstance(result, Later) else result
