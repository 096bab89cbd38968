"""Runs the registered rules for one request and returns a typed `Decision`.

Shared by the HTTP server and the `check` CLI, so both give the same answer for the same object;
`admission.responses.review_response` turns the decision into the wire response.

Mutators get a private copy of the object and the patch is the diff of the copy against the
request (as controller-runtime's defaulter does), so whatever a mutator edits ends up in the
patch and nothing it does can change the request itself. A mutator registered with `edits` (the
dicts it changes in place) gets a copy of just those dicts and of the dicts on the way to them,
sharing everything else with the request; the diff then passes over every shared subtree with
one identity check, far cheaper than a deep copy and a diff of the whole pod (benchmarks/policies.py;
figures in benchmarks/HISTORY.md). A mutator without `edits`, or any rule in
a review beside one, makes it a deep copy of the whole object again.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import orjson

from ..admission.decision import Decision, RuleNote
from ..admission.patching import make_patch
from ..admission.review import Request
from ..shapes import labels_of, namespace_of
from .context import Context
from .registry import REGISTRY, Action, Registry, Rule, Views, being_deleted

log = logging.getLogger("servinggate.engine")


def deep_copy(obj: Any) -> Any:
    """A private copy. An orjson round trip is several times faster than copy.deepcopy for
    JSON-shaped data; what orjson cannot encode (integers beyond 64 bits from a YAML file in
    `check`) falls back to deepcopy."""
    try:
        return orjson.loads(orjson.dumps(obj))
    except (orjson.JSONEncodeError, TypeError):
        return copy.deepcopy(obj)


def private_copy(obj: dict[str, Any], rules: tuple[Rule, ...]) -> dict[str, Any]:
    """The object the mutators edit: a deep copy, unless every rule names the dicts it changes
    (`Rule.edits`); then the root and each dict on those paths, and on the way to them, is a
    shallow copy, a list met on a path a deep one, and all else is shared with the request."""
    if any(rule.edits is None for rule in rules):
        return deep_copy(obj)
    root = dict(obj)
    copied = {id(root)}
    for rule in rules:
        for path in rule.edits or ():
            node = root
            for key in path:
                value = node.get(key)
                if isinstance(value, list):
                    node[key] = deep_copy(value)
                if not isinstance(value, dict):
                    break
                if id(value) not in copied:
                    value = node[key] = dict(value)
                    copied.add(id(value))
                node = value
    return root


def _crashed(decision: Decision, req: Request, rule_name: str) -> Decision:
    log.exception("rule %s raised on review %s", rule_name, req.uid)
    decision.crash = RuleNote(rule_name, "raised an exception")
    decision.patch = []
    return decision


def _deferred(decision: Decision) -> Decision:
    """A lookup would have waited where the review may not: stop, the caller runs it again."""
    decision.deferred = True
    decision.patch = []
    return decision


def validate(req: Request, ctx: Context, registry: Registry = REGISTRY, may_wait: bool = True) -> Decision:
    if being_deleted(req):
        return Decision("validate")  # see NOT_BEING_DELETED: the API server does not send these
    matched = registry.match("validate", req.resource.group, req.resource.resource, req.sub_resource, req.operation)
    actions = ctx.actions
    rules = [r for r in matched if actions.get(r.name) != "off"] if actions else matched
    decision = Decision("validate", rules=tuple(r.name for r in rules))
    if rules:
        ctx = ctx.for_review(may_wait)
    views = Views(req)  # this review's memo: a family of rules shares one view of the object
    for rule in rules:
        try:
            verdict = rule.judge(req, ctx, views)
        except Exception:
            return _deferred(decision) if ctx.deferred else _crashed(decision, req, rule.name)
        if ctx.deferred:
            return _deferred(decision)
        decision.add(rule.name, verdict, actions.get(rule.name, "deny"))
    return decision


def _namespace(req: Request, obj: dict[str, Any]) -> str:
    if req.namespace:
        return req.namespace
    return namespace_of(obj)


def mutate(req: Request, ctx: Context, registry: Registry = REGISTRY, may_wait: bool = True) -> Decision:
    rules = registry.match("mutate", req.resource.group, req.resource.resource, req.sub_resource, req.operation)
    original = req.object
    if original is None:
        return Decision("mutate")
    # A rule's scope is judged on the object as sent, as the API server's objectSelector is.
    labels, namespace = labels_of(original), _namespace(req, original)
    in_scope = tuple(r for r in rules if ctx.actions.get(r.name) != "off" and (r.scope is None or r.scope.admits(labels, namespace, ctx.settings)))
    decision = Decision("mutate", rules=tuple(r.name for r in in_scope))
    if not in_scope:
        return decision
    edited = private_copy(original, in_scope)
    ctx = ctx.for_review(may_wait)
    for rule in in_scope:
        try:
            changes = rule.fn(req, edited, ctx)
        except Exception:
            return _deferred(decision) if ctx.deferred else _crashed(decision, req, rule.name)
        if ctx.deferred:
            return _deferred(decision)
        decision.add_changes(rule.name, changes)
    decision.edited = edited
    decision.patch = make_patch(original, edited)
    return decision


def review(action: Action, req: Request, ctx: Context, registry: Registry = REGISTRY, may_wait: bool = True) -> Decision:
    """`may_wait` False: a lookup that would wait for the API server stops the review instead
    (`Decision.deferred`), so that its caller can run it again where waiting is allowed."""
    return validate(req, ctx, registry, may_wait) if action == "validate" else mutate(req, ctx, registry, may_wait)
