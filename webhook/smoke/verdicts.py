"""Reading the API server's answer to one dry-run create: did a `*.servinggate.io` webhook answer
as expected? Pure functions of (HTTP status, body), so every case is tested without a cluster.

The API server words a webhook's refusal as `admission webhook "NAME" denied the request: ...`;
NAME says whose webhook it was, so a refusal by Kthena's own webhook (or any other) is told apart
from ours. Answers that mean the check itself cannot run (no permission, Kthena's CRDs or the
namespace missing, the API server failing) are `Unusable`, which the command exits 2 for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..kthena import ANNOTATION_GROUP
from ..policies.pods import GANG_LABEL
from .objects import DEFAULT_SCHEDULER

OUR_DOMAIN = ".servinggate.io"
UNREADABLE = "unreadable"  # our MutatingAdmissionPolicy's binding exists or not: this user may not read it
_DENIED = re.compile(r'admission webhook "(?P<name>[^"]+)" denied the request:?\s*(?P<message>.*)', re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    text: str


class Unusable(Exception):
    """The answer says the check cannot be made here (exit 2), not that a webhook misbehaved."""


def _message(body: Any) -> str:
    message = body.get("message") if isinstance(body, dict) else None
    return " ".join(str(message or body).split())


def refused_by(body: Any) -> tuple[str, str] | None:
    """(webhook name, its message) when a webhook refused the request."""
    m = _DENIED.search(_message(body))
    return (m["name"], m["message"]) if m else None


def unusable(status: int, body: Any, what: str) -> None:
    """Raise Unusable for the answers after which no verdict about the webhooks is possible."""
    message = _message(body)
    if status == 401:
        raise Unusable(f"unauthorized: the API server rejected the credentials ({message})")
    if status == 403 and refused_by(body) is None:
        raise Unusable(f"forbidden: cannot create {what} (RBAC: `create` on it in the smoke namespace): {message}")
    if status == 404:
        if "namespaces" in message and "not found" in message:
            raise Unusable(f"the smoke namespace does not exist: {message}")
        raise Unusable(f"the API server does not serve {what}: are Kthena's CRDs installed? ({message})")
    if status >= 500 and refused_by(body) is None:
        raise Unusable(f"API server error {status} creating {what}: {message}")


def _other(name: str, message: str) -> str:
    return f'refused by another webhook first, "{name}" (Kthena\'s own?), so ours was not seen: {message}'


def accepted(status: int, body: Any, what: str) -> Verdict:
    """The known-good object: created (dry run)."""
    unusable(status, body, what)
    if status in (200, 201):
        return Verdict(True, "accepted")
    refusal = refused_by(body)
    if refusal is None:
        return Verdict(False, f"refused before admission webhooks (schema or another admission plugin): {_message(body)}")
    name, message = refusal
    if name.endswith(OUR_DOMAIN):
        return Verdict(False, f'refused by our webhook "{name}", which should accept it: {message}')
    return Verdict(False, _other(name, message))


def refused(status: int, body: Any, what: str, rule: str, field: str) -> Verdict:
    """The known-bad object: refused by one of our webhooks, for `rule` (whose message names `field`)."""
    unusable(status, body, what)
    if status in (200, 201):
        return Verdict(
            False,
            "accepted: no servinggate webhook refused it (webhook configuration missing, the namespace "
            "excluded by its namespaceSelector, failurePolicy Ignore with the webhook down, or the rule set to warn/audit/off)",
        )
    refusal = refused_by(body)
    if refusal is None:
        return Verdict(False, f"refused, but not by a webhook: {_message(body)}")
    name, message = refusal
    if not name.endswith(OUR_DOMAIN):
        return Verdict(False, _other(name, message))
    if field not in message:
        return Verdict(False, f'refused by our webhook "{name}", but not for {rule}: {message}')
    return Verdict(True, f'refused by "{name}" ({rule})')


def patched(status: int, body: Any, what: str) -> Verdict:
    """The ModelServing pod: created (dry run) with our scheduler patch applied."""
    verdict = accepted(status, body, what)
    if not verdict.ok:
        return verdict
    spec = body.get("spec") if isinstance(body, dict) else None
    scheduler = spec.get("schedulerName") if isinstance(spec, dict) else None
    if scheduler in (None, "", DEFAULT_SCHEDULER):
        return Verdict(
            False,
            f"accepted without our patch: schedulerName is still {scheduler or 'unset'!s} (no servinggate "
            "mutating webhook answered: configuration missing, namespace excluded, or pods.default-scheduler off)",
        )
    return Verdict(True, f"patched by our mutating webhook: schedulerName {scheduler}")


def gang_made(status: int, body: Any, what: str, policy: str | None) -> Verdict:
    """The opt-in gang's pod: created (dry run) with the gang scheduler and its PodGroup
    annotation; `policy` is the MutatingAdmissionPolicy version installed (None: none is), which
    says whose mutation it was: the API server runs the policy before any webhook, and the
    webhook's patch over a pod the policy made changes nothing."""
    verdict = accepted(status, body, what)
    if not verdict.ok:
        return verdict
    meta = body.get("metadata") if isinstance(body, dict) else None
    spec = body.get("spec") if isinstance(body, dict) else None
    scheduler = spec.get("schedulerName") if isinstance(spec, dict) else None
    group = ((meta or {}).get("annotations") or {}).get(ANNOTATION_GROUP) if isinstance(meta, dict) else None
    gang = ((meta or {}).get("labels") or {}).get(GANG_LABEL) if isinstance(meta, dict) else None
    if policy == UNREADABLE:
        path = "our mutating webhook or the MutatingAdmissionPolicy (its binding could not be read)"
    elif policy:
        path = f"the MutatingAdmissionPolicy ({policy}), in the API server"
    else:
        path = "our mutating webhook (no MutatingAdmissionPolicy installed)"
    if scheduler in (None, "", DEFAULT_SCHEDULER) or group != gang:
        return Verdict(False, f"accepted unmutated: schedulerName {scheduler or 'unset'!s}, PodGroup annotation {group or 'unset'!s} (expected from {path})")
    return Verdict(True, f"by {path}; schedulerName {scheduler}, PodGroup {group}")
