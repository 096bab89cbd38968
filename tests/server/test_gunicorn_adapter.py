"""Every gunicorn name the worker relies on exists in the installed gunicorn, and only the adapter
module imports gunicorn: an upgrade that renames something fails here, not in a worker."""

from __future__ import annotations

import ast
import inspect
import re

import pytest
from support import REPO

from webhook.server import gunicorn_adapter as adapter


def assigned_on_self(cls: type) -> set[str]:
    """The attributes the class or its bases set on `self` anywhere in their code."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        names |= set(re.findall(r"self\.(\w+)\s*(?::[^=]+)?=(?!=)", source))
    return names


@pytest.mark.parametrize(
    ("cls", "methods", "attributes"),
    [
        (adapter.ThreadWorker, adapter.WORKER_METHODS, adapter.WORKER_ATTRIBUTES),
        (adapter.TConn, adapter.CONNECTION_METHODS, adapter.CONNECTION_ATTRIBUTES),
        (adapter.RequestParser, adapter.PARSER_METHODS, ()),
        (adapter.wsgi.Response, adapter.RESPONSE_METHODS, adapter.RESPONSE_ATTRIBUTES),
        (adapter.Logger, (), adapter.LOGGER_ATTRIBUTES),
    ],
    ids=["worker", "connection", "parser", "response", "logger"],
)
def test_every_method_and_attribute_the_worker_uses_exists(cls, methods, attributes):
    assert [m for m in methods if not callable(getattr(cls, m, None))] == []
    assert sorted(set(attributes) - assigned_on_self(cls)) == []


def test_the_parser_pieces_exist():
    parser = adapter.request_parser(adapter.gunicorn_config(), iter([b"GET / HTTP/1.1\r\n\r\n"]), ("127.0.0.1", 1))
    assert [m for m in adapter.UNREADER_METHODS if not callable(getattr(parser.unreader, m, None))] == []
    request = next(parser)
    assert [a for a in adapter.REQUEST_ATTRIBUTES if not hasattr(request, a)] == []


def test_every_setting_the_worker_reads_exists():
    cfg = adapter.gunicorn_config()
    missing = [name for name in adapter.CONFIG_SETTINGS if name not in cfg.settings and not hasattr(type(cfg), name)]
    assert missing == []


def test_a_renamed_name_would_be_caught():
    """The check itself: a name gunicorn does not have is reported."""
    assert "no_such_queue" not in assigned_on_self(adapter.ThreadWorker)
    assert "poller" in assigned_on_self(adapter.ThreadWorker)


def test_only_the_adapter_imports_gunicorn():
    importers = []
    for path in sorted((REPO / "webhook").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "gunicorn" or n.startswith("gunicorn.") for n in names):
                importers.append(str(path.relative_to(REPO)))
    assert sorted(set(importers)) == ["webhook/server/gunicorn_adapter.py"]
