"""Helpers for the policy tests: the recorded reviews and Kthena's gang example, as fixtures."""

from __future__ import annotations

import copy

import pytest
from support import load_admission

from webhook.admission.review import Request, make_request, parse_review
from webhook.policies import Context, DictLookups, engine
from webhook.policies.settings import PolicySettings


def _review(name: str) -> dict:
    return load_admission(name)


class Kit:
    """What the tests need: recorded requests, the gang example ModelServing, and runners."""

    @staticmethod
    def review(name: str) -> dict:
        return _review(name)

    @staticmethod
    def request(name: str) -> Request:
        return parse_review(_review(name))

    @staticmethod
    def obj(name: str) -> dict:
        return copy.deepcopy(_review(name)["request"]["object"])

    @staticmethod
    def gang_ms() -> dict:
        """Kthena's examples/model-serving/gangPolicy.yaml as the API server stored it."""
        return Kit.obj("modelservings-create-gang-example-validating")

    @staticmethod
    def ctx(*objects: dict, **settings) -> Context:
        if "skip_namespaces" in settings:
            settings["skip_namespaces"] = frozenset(settings["skip_namespaces"])
        return Context(settings=PolicySettings(**settings), lookups=DictLookups(objects))

    @staticmethod
    def validate(obj: dict, *, old: dict | None = None, ctx: Context | None = None, **kw):
        req = make_request(obj, operation="UPDATE" if old is not None else "CREATE", old=old, **kw)
        return engine.validate(req, ctx or Kit.ctx())

    @staticmethod
    def mutate(obj: dict, *, ctx: Context | None = None, namespace: str | None = None):
        req = make_request(obj)
        if namespace is not None:
            from dataclasses import replace

            req = replace(req, namespace=namespace)
        return engine.mutate(req, ctx or Kit.ctx())

    @staticmethod
    def causes(decision) -> list[tuple[str, str, str]]:
        """(reason, field, message) of each error, as the API server will show them."""
        from webhook.admission.responses import review_response

        status = review_response(make_request({}), decision)["response"].get("status") or {}
        return [(c["reason"], c["field"], c["message"]) for c in (status.get("details") or {}).get("causes", [])]


@pytest.fixture(scope="session")
def kit() -> type[Kit]:
    return Kit
