"""The README and docs/ as a newcomer meets them: a README that fits on a screen and leads to every
doc, links that land on a file and a heading, and examples that do what the text says.

The generated tables inside the docs are tested in tests/test_config.py (they come from the code);
the install examples in tests/deploy/ (they are rendered with kubectl).
"""

from __future__ import annotations

import re
from pathlib import Path

from support.commands import run_webhook

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
    proc = run_webhook(["check", "-"], input=manifest, cwd=REPO, timeout=120)
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


# ---- docs that stay true (issue 39) ----------------------------------------------------------------

MAX_DOC_LINE = 200


def _fenced_spans(text: str) -> set[int]:
    """Line numbers inside fenced blocks: verbatim program output and commands, shown as printed."""
    inside, fenced = set(), False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):  # a fence may be indented, inside a list item
            fenced = not fenced
        elif fenced:
            inside.add(n)
    return inside


def long_lines(path: Path, limit: int = MAX_DOC_LINE) -> list[tuple[int, int]]:
    text = path.read_text()
    fenced = _fenced_spans(text)
    return [(n, len(line)) for n, line in enumerate(text.splitlines(), 1) if len(line) > limit and n not in fenced]


def test_no_doc_line_is_over_200_characters():
    """Prose, lists and tables wrap at 200 characters; a fenced block shows a program's output or a
    command as printed, which wrapping would make untrue, so only it may run longer."""
    long = {str(p.relative_to(REPO)): long_lines(p) for p in [README, *DOCS]}
    assert {k: v for k, v in long.items() if v} == {}


def test_the_long_line_check_sees_a_long_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("short\n" + "x" * 201 + "\n```\n" + "y" * 300 + "\n```\n  ```\n" + "z" * 300 + "\n  ```\n")
    assert long_lines(page) == [(2, 201)]


# A measured figure (a number with a unit of time, size or a ratio) belongs in benchmarks/HISTORY.md,
# dated, not in a comment that outlives it. Constants keep their value in the code, not the comment.
FIGURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:\s?(?:µs|us|ms|MiB|KiB|GiB|MB|KB)|x)(?!\w)")


def comment_texts(source: str) -> list[tuple[int, str]]:
    """Every comment and docstring line of a module, with its line number."""
    import ast
    import io
    import tokenize

    out = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out += [(first.lineno + i, line) for i, line in enumerate(first.value.value.splitlines())]
    return out


def figures(path: Path) -> list[str]:
    return [f"{path.relative_to(REPO)}:{n}: {m[0]}" for n, text in comment_texts(path.read_text()) for m in FIGURE.finditer(text)]


def test_no_measured_figure_in_a_code_comment():
    assert [f for p in sorted((REPO / "webhook").rglob("*.py")) for f in figures(p)] == []


def test_the_figure_check_sees_a_figure_in_a_comment_and_a_docstring():
    text = '"""Fast: 12 µs a call."""\nX = 1  # 3.5x the old one\nY = "40 ms"  # a string is code, not a comment\n'
    assert sorted(m[0] for _, t in comment_texts(text) for m in FIGURE.finditer(t)) == ["12 µs", "3.5x"]


def _development_layout() -> list[str]:
    """The paths the layout block of docs/development.md names, `tests/` children as `tests/x/`."""
    text = (REPO / "docs" / "development.md").read_text()
    block = text.split("\n## Layout\n", 1)[1].split("```\n", 2)[1]
    paths, parent = [], ""
    for line in block.splitlines():
        name = line.split()[0]
        if line.startswith("  "):
            paths.append(parent + name)
        else:
            parent = name if name.endswith("/") else ""
            paths.append(name)
    return paths


def test_the_development_layout_names_paths_that_exist():
    named = _development_layout()
    assert "webhook/" in named and "tests/fakes/" in named
    assert [p for p in named if not (REPO / p).exists()] == []
