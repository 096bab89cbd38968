"""The README and docs/ as a newcomer meets them: a README that fits on a screen and leads to every
doc, links that land on a file and a heading, and examples that do what the text says.

The generated tables inside the docs are tested in tests/test_config.py (they come from the code);
the install examples in tests/deploy/ (they are rendered with kubectl).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_README_LINES = 250

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks: links and headings in examples do not count."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(path.read_text()):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            slug = _slug(m[1])
            out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return out


def links(path: Path) -> list[str]:
    return [m for line in _prose(path.read_text()) for m in LINK.findall(line)]


def test_the_readme_fits_on_a_screen_or_two():
    lines = README.read_text().count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines: move the detail to docs/"


def test_every_doc_is_linked_from_the_readme():
    linked = {(README.parent / link.split("#")[0]).resolve() for link in links(README)}
    assert [d.name for d in DOCS if d.resolve() not in linked] == []


def test_every_relative_link_lands_on_a_file_and_a_heading():
    broken = []
    for page in [README, *DOCS]:
        for link in links(page):
            if re.match(r"[a-z]+:", link):
                continue  # https:, mailto:
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {link} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.relative_to(REPO)}: {link} (no such heading)")
    assert broken == []


def test_the_anchors_are_made_as_github_makes_them():
    assert _slug("Protecting a pod: `servinggate.io/remove-last`") == "protecting-a-pod-servinggateioremove-last"
    assert _slug("When the webhook is down (emergency)") == "when-the-webhook-is-down-emergency"
    assert _slug("Rolling out: audit or warn first, then deny") == "rolling-out-audit-or-warn-first-then-deny"


def test_the_files_the_readme_sends_you_to_exist():
    named = set(re.findall(r"(tests/fixtures/[\w./-]+\.(?:json|yaml))", README.read_text()))
    assert named, "the README's try-it commands name recorded fixtures"
    assert [n for n in sorted(named) if not (REPO / n).is_file()] == []


def test_the_readmes_check_example_prints_what_the_readme_says():
    """The heredoc after `./dev check -` goes through `check`; the next bare block is its output."""
    text = README.read_text()
    m = re.search(r"```sh\n\./dev check - <<'EOF'\n(.*?)\nEOF\n```\n.*?```\n(.*?)```", text, re.S)
    assert m, "README.md has a `./dev check -` example followed by its output"
    manifest, said = m[1] + "\n", m[2]
    proc = subprocess.run([sys.executable, "-m", "webhook", "check", "-"], input=manifest, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == said


def _readme_commands() -> list[str]:
    """The first word of each row of the README's "Commands" table."""
    section = README.read_text().split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z]+)[^`]*` \|", section, re.M)


def test_the_readme_command_table_lists_every_command_of_the_cli_once():
    from webhook.__main__ import COMMANDS

    listed = _readme_commands()
    assert len(listed) == len(set(listed)), f"listed twice: {listed}"
    assert sorted(listed) == sorted(COMMANDS), f"README lists {sorted(listed)}, the CLI has {sorted(COMMANDS)}"


MAX_DEVELOPMENT_LINE = 300


def test_development_md_has_no_line_over_300_characters():
    long = [(n, len(line)) for n, line in enumerate((REPO / "docs" / "development.md").read_text().splitlines(), 1) if len(line) > MAX_DEVELOPMENT_LINE]
    assert not long, f"docs/development.md lines (number, length) over {MAX_DEVELOPMENT_LINE} characters: {long}"
