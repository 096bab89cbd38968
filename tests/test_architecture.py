"""The shape of the code, checked on every test run (and so in CI): layers, types, module sizes,
and a repository that needs nothing beside itself."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 420  # "no module over ~400 lines": split by concern before it grows past this
MAX_FUNCTION_LINES = 80  # a function a reader takes in at once; past this, name its steps


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def _lint_imports(root: Path) -> tuple[int, str]:
    """lint-imports over the `webhook` package found in `root` (it puts its folder first on the
    path), with its output's wrapped lines joined so a contract's name reads on one line."""
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "--no-logo"], cwd=root, capture_output=True, text=True, timeout=600
    )
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def _layers_contract() -> dict:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    [layers] = [c for c in contracts if c["type"] == "layers"]
    return layers


def test_import_contracts_hold():
    """Policies and admission import no web framework or Kubernetes client; only kube/, the
    certificate keeper and the reconciler's I/O talk to the API (contracts in pyproject.toml)."""
    proc = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "broken" in proc.stdout and " 0 broken" in proc.stdout


def test_the_layers_contract_is_checked_and_kept():
    """No import runs back up a layer and no package imports a sibling of its layer, so there is
    no circle between packages (the layers are in pyproject.toml)."""
    layers = _layers_contract()
    assert layers["exhaustive"] is True and layers["containers"] == ["webhook"]
    code, out = _lint_imports(REPO)
    assert code == 0, out
    assert f"{layers['name']} KEPT" in out


def test_no_import_circle_between_modules():
    """The layers keep packages apart; inside a package, no two modules need each other either,
    counting imports made only for type annotations (`if TYPE_CHECKING:`): a circle there is a
    circle in the design. (`policies.registry` knows the settings and the context it is handed
    only through Protocols of its own, since `PolicySettings` checks rule names against it.)"""
    import grimp

    graph = grimp.build_graph("webhook", cache_dir=None, exclude_type_checking_imports=False)
    circles = sorted(
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if graph.chain_exists(importer=imported, imported=importer)
    )
    assert circles == []


def test_the_layers_contract_refuses_an_import_back_up_a_sibling_import_and_an_unplaced_module(tmp_path):
    """The contract bites: in a copy of the package, the circle issue 17 removed (config importing
    the rule registry), `check` importing the reconciler, and a top-level module placed in no
    layer each break it."""
    shutil.copytree(REPO / "webhook", tmp_path / "webhook", ignore=shutil.ignore_patterns("__pycache__", "*.json"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    with open(tmp_path / "webhook" / "config.py", "a", encoding="utf-8") as fh:
        fh.write("\nfrom .policies import REGISTRY  # noqa: E402\n")
    with open(tmp_path / "webhook" / "check" / "cli.py", "a", encoding="utf-8") as fh:
        fh.write("\nfrom ..scalein import ranking  # noqa: E402\n")
    (tmp_path / "webhook" / "stray.py").write_text('"""Belongs to no layer."""\n')
    code, out = _lint_imports(tmp_path)
    assert code == 1, out
    assert f"{_layers_contract()['name']} BROKEN" in out
    assert "webhook.config is not allowed to import webhook.policies" in out
    assert "webhook.check is not allowed to import webhook.scalein" in out
    assert "webhook.stray" in out and "not listed as layers" in out


def test_mypy_reports_no_errors():
    """Configuration pinned in pyproject.toml ([tool.mypy]); no blanket ignores. Incremental, with its
    cache in the environment's folder (.venv, ignored by git): a fresh clone checks everything, a
    later run only what changed."""
    proc = _run("mypy", "--cache-dir", str(Path(sys.prefix) / "mypy-cache"))
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


def test_the_rules_and_lookups_know_nothing_of_threads():
    """Whether a lookup may wait is an argument (Context.may_wait), not a thread-local."""
    for folder in ("policies", "kube"):
        for path in sorted((REPO / "webhook" / folder).rglob("*.py")):
            text = path.read_text()
            assert "threading.local" not in text and "MustWait" not in text, path


def test_ruff_finds_nothing_and_the_code_is_formatted():
    """Lint and import order (`ruff check`) and formatting (`ruff format --check`), configured in
    pyproject.toml ([tool.ruff]), over the whole repository; a `noqa` names its rule."""
    lint = _run("ruff", "check", "--no-cache", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    formatted = _run("ruff", "format", "--check", "--no-cache", ".")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    bare = [
        f"{path}:{n}"
        for path in sorted(REPO.glob("**/*.py"))
        if ".venv" not in path.parts and "fixtures" not in path.parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"#\s*noqa(?!:\s*[A-Z]+[0-9]+)", line)
    ]
    assert not bare, f"noqa without a rule code: {bare}"


def test_every_noqa_names_a_rule_ruff_selects():
    """A `noqa` for a rule ruff does not run silences nothing and only misleads the reader: each
    code a `noqa` names is one of [tool.ruff.lint] select's rules."""
    import tomllib

    selected = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["select"]
    unselected = [
        f"{path.relative_to(REPO)}:{n} {code}"
        for path in sorted(REPO.glob("**/*.py"))
        if ".venv" not in path.parts and "fixtures" not in path.parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for codes in re.findall(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", line)
        for code in re.split(r"\s*,\s*", codes)
        if not any(code.startswith(prefix) and code[len(prefix) :].isdigit() for prefix in selected)
    ]
    assert not unselected, f"noqa for rules ruff does not select: {unselected}"
