"""Runs the registered rules for one request and turns their results into a review response.

Shared by the HTTP server and the `check` CLI, so both give the same answer for the same object.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import orjson

from ..admission.responses import Verdict, error_response, make_patch, patch_response, verdict_response
from ..admission.review import Request
from .context import Context
from .registry import REGISTRY, Action, Registry, Rule

log = logging.getLogger("servinggate.engine")


@dataclass(slots=True)
class Outcome:
    response: dict[str, Any]
    allowed: bool
    code: int
    matched: bool
    patch: list[dict[str, Any]]
    warnings: list[str]
    errors: list[str]
    rule_error: str | None = None


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    # An orjson round trip is several times faster than copy.deepcopy for JSON-shaped data.
    return orjson.loads(orjson.dumps(obj))


def _copy_for(rules: tuple[Rule, ...], obj: dict[str, Any]) -> dict[str, Any]:
    """A private copy for the mutators: only the dicts they declare they edit, when all declare.

    Shared, untouched subtrees also let make_patch skip them by identity, which is what keeps
    a pod mutation cheap (a full copy plus a full diff cost about as much as parsing the pod).
    """
    paths: list[tuple[str, ...]] = []
    for rule in rules:
        if rule.edits is None:
            return _copy(obj)
        paths.extend(rule.edits)
    root = dict(obj)
    copied = {id(root)}
    for path in paths:
        node = root
        for key in path:
            child = node.get(key)
            if type(child) is not dict:
                break
            if id(child) not in copied:
                child = dict(child)
                node[key] = child
                copied.add(id(child))
            node = child
    return root


def _crashed(req: Request, rule_name: str) -> Outcome:
    log.exception("rule %s raised on review %s", rule_name, req.uid)
    message = f"internal error in rule {rule_name}; the webhook log has the details (review uid {req.uid})"
    response = error_response(req.uid, req.api_version, 500, message, "InternalError")
    return Outcome(response, False, 500, True, [], [], [message], rule_name)


def validate(req: Request, ctx: Context, registry: Registry = REGISTRY) -> Outcome:
    rules = registry.match("validate", req.resource.group, req.resource.resource, req.sub_resource, req.operation)
    verdict = Verdict()
    for rule in rules:
        try:
            verdict.extend(rule.fn(req, ctx))
        except Exception:
            return _crashed(req, rule.name)
    response = verdict_response(req, verdict)
    status = response["response"].get("status") or {}
    return Outcome(
        response,
        verdict.allowed,
        int(status.get("code", 200)),
        bool(rules),
        [],
        response["response"].get("warnings", []),
        [str(e) for e in verdict.errors] + ([verdict.refusal] if verdict.refusal else []),
    )


def mutate(req: Request, ctx: Context, registry: Registry = REGISTRY) -> Outcome:
    rules = registry.match("mutate", req.resource.group, req.resource.resource, req.sub_resource, req.operation)
    if not rules or req.object is None:
        return Outcome(patch_response(req, [], []), True, 200, bool(rules), [], [], [])
    edited = _copy_for(rules, req.object)
    warnings: list[str] = []
    for rule in rules:
        try:
            warnings.extend(rule.fn(req, edited, ctx) or ())
        except Exception:
            return _crashed(req, rule.name)
    ops = make_patch(req.object, edited)
    response = patch_response(req, ops, warnings)
    return Outcome(response, True, 200, True, ops, response["response"].get("warnings", []), [])


def review(action: Action, req: Request, ctx: Context, registry: Registry = REGISTRY) -> Outcome:
    return validate(req, ctx, registry) if action == "validate" else mutate(req, ctx, registry)
