"""The shape of the code, checked on every test run (and so in CI): layers, types, module sizes,
and a repository that needs nothing beside itself."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 420  # "no module over ~400 lines": split by concern before it grows past this
MAX_FUNCTION_LINES = 80  # a function a reader takes in at once; past this, name its steps


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_import_contracts_hold():
    """Policies and admission import no web framework or Kubernetes client; only kube/, the
    certificate keeper and the reconciler's I/O talk to the API (contracts in pyproject.toml)."""
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "broken" in proc.stdout and " 0 broken" in proc.stdout


def test_mypy_reports_no_errors():
    """Configuration pinned in pyproject.toml ([tool.mypy]); no blanket ignores."""
    proc = _run("mypy", "--no-incremental")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pyproject = (REPO / "pyproject.toml").read_text()
    assert "ignore_errors" not in pyproject


def test_no_bare_type_ignores_and_no_oversized_modules():
    for path in sorted((REPO / "webhook").rglob("*.py")):
        text = path.read_text()
        assert not re.search(r"#\s*type:\s*ignore(?!\[)", text), f"{path}: a type: ignore without an error code"
        lines = text.count("\n")
        assert lines <= MAX_MODULE_LINES, f"{path.relative_to(REPO)} has {lines} lines: split it by concern"


def test_no_oversized_functions():
    """Every function and method under webhook/, nested ones included, counted from its first
    decorator to its last line (docstring and comments count: they are read too)."""
    too_long = []
    for path in sorted((REPO / "webhook").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(REPO)}:{first} {node.name}() has {lines} lines")
    assert not too_long, "split into named steps:\n" + "\n".join(too_long)


def test_nothing_reads_outside_the_repository():
    """A clone is all a person has: tests, benchmarks, docs and the dev script read only the repo."""
    pattern = re.compile(r"\.\./shared|SERVINGGATE_SHARED")
    for top in ("webhook", "tests", "benchmarks", "dev", "README.md", "docs", "Dockerfile", ".ci"):
        root = REPO / top
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file() and "fixtures" not in p.parts and p.suffix != ".pyc"]
        for path in files:
            if path == Path(__file__):
                continue
            assert not pattern.search(path.read_text(errors="replace")), f"{path.relative_to(REPO)} reads outside the repository"
