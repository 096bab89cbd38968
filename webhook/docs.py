"""The parts of the docs that are derived from the code: the settings of every command
(docs/configuration.md), the rules and the table of Pod validation by Kubernetes minor
(docs/policies.md), and the layout of the package and of its rule modules (docs/design-notes.md).

`./dev docs` rewrites them between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`
markers; a test fails when a committed file differs from what this module renders, so a
setting's flag, variable, default and help are written once, in its `setting(...)` declaration,
and a rule's name, resource, operations and summary once, in its registration and docstring.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from . import config
from .audit.settings import AuditSettings
from .check.settings import CheckSettings
from .scalein.settings import PlanSettings, ReconcileSettings
from .servesettings import ServeSettings
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


WIDTH = 100  # generated lines wrap here; tests/test_docs.py holds every doc line to 200 characters


def _item(text: str) -> list[str]:
    """One Markdown list item, wrapped: `- ` then two-space continuation lines. A continuation line
    never starts with `N.` (Markdown would read a nested numbered list): the number stays above."""
    text = re.sub(r"\[[^\]]*\]\([^)]*\)", lambda link: link[0].replace(" ", "\x00"), text)  # a link stays on one line
    lines = textwrap.wrap(text, WIDTH, initial_indent="- ", subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    for i in range(1, len(lines)):
        number = re.match(r"  (\d+\.) ", lines[i])
        if number:
            lines[i - 1] += " " + number[1]
            lines[i] = "  " + lines[i][number.end() :]
    return [line.replace("\x00", " ") for line in lines]


def settings_markdown(command: str) -> str:
    cls = _command_settings()[command]
    out: list[str] = []
    for group, rows in config.settings_groups(cls):
        out += [_title(group), ""]
        for flag, env, default, text in rows:
            out += _item(f"`{flag}` (`{env}`, default `{default}`): {text}")
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

    out: list[str] = []
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
        out += _item(f"`{rule.name}`: {resource}, {', '.join(t.operations)}; default {rule.default}; reads {reads}. {summary}")
    return "\n".join(out) + "\n"


def pod_versions_markdown() -> str:
    """Per gate that Pod validation reads, what each ported minor does (webhook/podvalidation/
    versions.py: GATES, FIELDS, GATED_FIELDS and CHECKS)."""
    from .podvalidation.versions import CHECKS, GATED_FIELDS, GATES, PORTED, status_at

    out = ["| feature gate | " + " | ".join(str(v) for v in PORTED) + " |", "|---|" + "---|" * len(PORTED)]
    notes: list[str] = []
    for gate in sorted(GATES):
        paths = sorted({".".join(p.split(".")[-2:]) for p in GATED_FIELDS.get(gate, ())})
        fields = ", ".join(f"`{p}`" for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
        cells = " | ".join(status_at(gate, v) for v in PORTED)
        out.append(f"| `{gate}` | {cells} |")
        notes += _item(f"`{gate}`: fields {fields or '-'}; ported checks: {CHECKS.get(gate, '-')}")
    return "\n".join(out + ["", "The fields each gate guards, and the checks ported for it:", "", *notes]) + "\n"


PACKAGE = Path(__file__).resolve().parent


def _summary(path: Path) -> str:
    """The first sentence of a module's docstring, read without importing it."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    return re.split(r"(?<=\.)\s", first, maxsplit=1)[0].rstrip(".") if first else "(no docstring)"


def _modules(folder: Path) -> list[tuple[str, Path]]:
    """The modules and packages directly in `folder`: (shown name, file holding the docstring)."""
    out = [(f"{p.name}/", p / "__init__.py") for p in sorted(folder.iterdir()) if (p / "__init__.py").is_file()]
    out += [(p.name, p) for p in sorted(folder.glob("*.py")) if p.name != "__init__.py"]
    return sorted(out)


def layout_markdown() -> str:
    """Every top-level module and package of `webhook/`, with its docstring's first sentence."""
    return "\n".join(line for name, path in _modules(PACKAGE) for line in _item(f"`{name}`: {_summary(path)}")) + "\n"


def policy_modules_markdown() -> str:
    """Every module of `webhook/policies/`, with its docstring's first sentence."""
    return "\n".join(line for name, path in _modules(PACKAGE / "policies") for line in _item(f"`{name}`: {_summary(path)}")) + "\n"


FILES = {"docs/configuration.md": "settings", "docs/policies.md": "rules", "docs/design-notes.md": "design"}


def sections(kind: str) -> dict[str, Callable[[], str]]:
    if kind == "rules":
        return {"rules": rules_markdown, "pod-versions": pod_versions_markdown}
    if kind == "design":
        return {"layout": layout_markdown, "policy-modules": policy_modules_markdown}
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
