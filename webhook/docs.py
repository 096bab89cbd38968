"""The parts of the docs that are derived from the code: the settings tables of every command
(docs/configuration.md), the table of rules and the table of Pod validation by Kubernetes minor
(docs/policies.md).

`./dev docs` rewrites them between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`
markers; a test fails when a committed file differs from what this module renders, so a
setting's flag, variable, default and help are written once, in its `setting(...)` declaration,
and a rule's name, resource, operations and summary once, in its registration and docstring.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

from . import config
from .audit.settings import AuditSettings
from .check.settings import CheckSettings
from .scalein.settings import PlanSettings, ReconcileSettings
from .settings.serve import ServeSettings
from .smoke.settings import SmokeSettings


def _command_settings() -> dict[str, type]:
    return {
        "serve": ServeSettings,
        "check": CheckSettings,
        "plan": PlanSettings,
        "reconcile": ReconcileSettings,
        "audit": AuditSettings,
        "smoke": SmokeSettings,
    }


def _title(group: type) -> str:
    doc = (group.__doc__ or "").strip().splitlines()
    first = doc[0] if doc and not doc[0].startswith(group.__name__ + "(") else ""
    name = re.sub(r"(?<!^)(?=[A-Z])", " ", group.__name__.removesuffix("Settings")).lower()
    return f"*{name}*" + (f": {first}" if first else "")


def settings_markdown(command: str) -> str:
    cls = _command_settings()[command]
    out: list[str] = []
    for group, rows in config.settings_groups(cls):
        out += [_title(group), "", "| flag | variable | default | meaning |", "|---|---|---|---|"]
        out += [f"| `{flag}` | `{env}` | `{default}` | {text} |" for flag, env, default, text in rows]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


_READS = {
    "object": "the object",
    "update": "the object and the old object (UPDATE)",
    "request": "the request, and other objects through lookups",
    "mutation": "edits a copy of the object (the patch is the diff)",
}


def rules_markdown() -> str:
    from .policies import REGISTRY

    out = ["| rule | resource | operations | default | reads | what it checks |", "|---|---|---|---|---|---|"]
    for rule in REGISTRY.rules():
        t = rule.target
        resource = f"`{t.full_resource}` ({t.group or 'core'}/{','.join(t.versions)})"
        reads = _READS[rule.kind]
        if rule.scope is not None:
            labels = " or ".join(f"`{key}`" for _, key in rule.scope.any_of)
            reads += f"; only objects labelled {labels}"
        if rule.replica_dependent:
            reads += "; re-run on `scale`"
        summary = " ".join((rule.fn.__doc__ or "").strip().split("\n\n")[0].split())
        out.append(f"| `{rule.name}` | {resource} | {', '.join(t.operations)} | {rule.default} | {reads} | {summary} |")
    return "\n".join(out) + "\n"


def pod_versions_markdown() -> str:
    """Per gate that Pod validation reads, what each ported minor does (webhook/podvalidation/
    versions.py: GATES, FIELDS, GATED_FIELDS and CHECKS)."""
    from .podvalidation.versions import CHECKS, GATED_FIELDS, GATES, PORTED, status_at

    out = ["| feature gate | " + " | ".join(str(v) for v in PORTED) + " | fields | ported checks |", "|---|" + "---|" * len(PORTED) + "---|---|"]
    for gate in sorted(GATES):
        paths = sorted({".".join(p.split(".")[-2:]) for p in GATED_FIELDS.get(gate, ())})
        fields = ", ".join(f"`{p}`" for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
        cells = " | ".join(status_at(gate, v) for v in PORTED)
        out.append(f"| `{gate}` | {cells} | {fields or '-'} | {CHECKS.get(gate, '-')} |")
    return "\n".join(out) + "\n"


FILES = {"docs/configuration.md": "settings", "docs/policies.md": "rules"}


def sections(kind: str) -> dict[str, Callable[[], str]]:
    if kind == "rules":
        return {"rules": rules_markdown, "pod-versions": pod_versions_markdown}
    return {f"settings:{name}": functools.partial(settings_markdown, name) for name in _command_settings()}


def render(text: str, kind: str = "settings") -> str:
    """`text` with every generated section replaced by what the code says today."""
    for name, make in sections(kind).items():
        pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:{re.escape(name)} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"no <!-- generated:{name} --> section to fill in")
        made = make()

        def fill(m: re.Match[str], made: str = made) -> str:
            return m.group(1) + made + m.group(2)

        text = pattern.sub(fill, text)
    return text


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0]) if argv else Path(".")
    for name, kind in FILES.items():
        path = root / name
        text = path.read_text(encoding="utf-8")
        new = render(text, kind)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
