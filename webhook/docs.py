"""The parts of README.md that are derived from the code: the settings tables of every command.

`./dev docs` rewrites them between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`
markers; a test fails when the committed README differs from what this module renders, so a
setting's flag, variable, default and help are written once, in its `setting(...)` declaration.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from . import config


def _command_settings() -> dict[str, type]:
    from .scalein.settings import ReconcileSettings, ScoringSettings

    return {"serve": config.ServeSettings, "check": config.CheckSettings, "plan": ScoringSettings, "reconcile": ReconcileSettings}


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


def sections() -> dict[str, Callable[[], str]]:
    return {f"settings:{name}": (lambda name=name: settings_markdown(name)) for name in _command_settings()}


def render(text: str) -> str:
    """`text` with every generated section replaced by what the code says today."""
    for name, make in sections().items():
        pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:{re.escape(name)} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"README.md has no <!-- generated:{name} --> section")
        text = pattern.sub(lambda m: m.group(1) + make() + m.group(2), text)
    return text


def main(argv: list[str] | None = None) -> int:
    path = Path(argv[0] if argv else "README.md")
    text = path.read_text(encoding="utf-8")
    new = render(text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"updated {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
