"""The shape of the code, checked on every test run: module and function sizes, the layers and
that their contract bites, the static checks `./dev lint` runs (ruff, mypy, import contracts, dead
code) and that CI runs them, and a repository that needs nothing beside itself."""

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


def test_the_layers_contract_is_exhaustive_over_the_package():
    """No import runs back up a layer and no package imports a sibling of its layer, so there is
    no circle between packages (the layers are in pyproject.toml; `./dev lint` checks them, and the
    test below shows the check bites)."""
    layers = _layers_contract()
    assert layers["exhaustive"] is True and layers["containers"] == ["webhook"]


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
        fh.write("\nfrom ..scalein.plan import ranking  # noqa: E402\n")
    (tmp_path / "webhook" / "stray.py").write_text('"""Belongs to no layer."""\n')
    code, out = _lint_imports(tmp_path)
    assert code == 1, out
    assert f"{_layers_contract()['name']} BROKEN" in out
    assert "webhook.config is not allowed to import webhook.policies" in out
    assert "webhook.check is not allowed to import webhook.scalein" in out
    assert "webhook.stray" in out and "not listed as layers" in out


def test_plan_and_the_reconciler_stay_apart(tmp_path):
    """`plan` (webhook/scalein/plan/) and the reconciler (webhook/scalein/reconcile/) share the pure
    core and nothing else: an import from one into the other breaks a contract, and so does the
    core importing either."""
    shutil.copytree(REPO / "webhook", tmp_path / "webhook", ignore=shutil.ignore_patterns("__pycache__", "*.json"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    with open(tmp_path / "webhook" / "scalein" / "plan" / "ranking.py", "a", encoding="utf-8") as fh:
        fh.write("\nfrom ..reconcile import contest  # noqa: E402\n")
    with open(tmp_path / "webhook" / "scalein" / "costs.py", "a", encoding="utf-8") as fh:
        fh.write("\nfrom .plan import rendering  # noqa: E402\n")
    code, out = _lint_imports(tmp_path)
    assert code == 1, out
    assert "Scale-in: plan and reconcile do not import each other BROKEN" in out
    assert "Scale-in: the shared core imports neither plan nor reconcile BROKEN" in out


def test_no_bare_type_ignores_and_no_oversized_modules():
    """mypy (`./dev lint`) is configured in pyproject.toml with no blanket ignores; a `type: ignore`
    names its error code; a module past MAX_MODULE_LINES is split by concern."""
    assert "ignore_errors" not in (REPO / "pyproject.toml").read_text()
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


def test_every_noqa_names_its_rule():
    """ruff (`./dev lint`) runs over the whole repository with zero findings; a `noqa` that
    silences it names the rule it silences."""
    bare = [
        f"{path}:{n}"
        for path in sorted(REPO.glob("**/*.py"))
        if ".venv" not in path.parts and "fixtures" not in path.parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"#\s*noqa(?!:\s*[A-Z]+[0-9]+)", line)
    ]
    assert not bare, f"noqa without a rule code: {bare}"


def _dev_lint_commands() -> list[str]:
    text = (REPO / "dev").read_text()
    body = text[text.index("  lint)") : text.index(";;", text.index("  lint)"))]
    return [line.split("check ", 1)[1] for line in body.splitlines() if line.strip().startswith("check .venv/bin/")]


def test_dev_lint_runs_every_static_check_and_ci_runs_it():
    """`./dev lint` runs ruff's lint and format check, mypy, the import contracts and the dead-code
    finder, each configured in pyproject.toml; `.ci/run` runs it beside the tests, as the README says."""
    tools = [c.split()[0].rsplit("/", 1)[1] + (" " + c.split()[1] if c.split()[0].endswith("ruff") else "") for c in _dev_lint_commands()]
    assert tools == ["ruff check", "ruff format", "mypy", "lint-imports", "vulture"]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]
    assert {"ruff", "mypy", "importlinter", "vulture"} <= set(pyproject)
    ci = (REPO / ".ci" / "run").read_text()
    assert "./dev lint" in ci and "./dev test" in ci
    assert 'SERVINGGATE_HYPOTHESIS_PROFILE="${SERVINGGATE_HYPOTHESIS_PROFILE:-ci}" ./dev test' in ci
    assert "./dev lint" in (REPO / "README.md").read_text()


def test_the_dead_code_finder_bites(tmp_path):
    """The package as it is has nothing vulture finds (the rules, found through their registration
    decorator, included); in a copy of it, an unused function is found."""
    shutil.copytree(REPO / "webhook", tmp_path / "webhook", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    clean = subprocess.run([str(Path(sys.executable).with_name("vulture"))], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    with open(tmp_path / "webhook" / "quantity.py", "a", encoding="utf-8") as fh:
        fh.write("\n\ndef never_called_helper() -> int:\n    return 1\n")
    dirty = subprocess.run([str(Path(sys.executable).with_name("vulture"))], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert dirty.returncode != 0
    assert "unused function 'never_called_helper'" in dirty.stdout


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
