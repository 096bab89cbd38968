"""`check` on 500 ModelServings (about 1 MB of YAML), through the whole pipeline, on one core.

The manifests are the verdict corpus's valid two-role gang ModelServing
(tests/fixtures/verdicts/cases/ms-valid.yaml) with the fields a real one carries (env, ports,
probes, volumes), renamed 500 times. Timed in the same run, best of --rounds:

  baseline  yaml.safe_load_all (PyYAML's pure-Python loader, what check used before) and
            yaml.load_all with CSafeLoader (libyaml), on the same text;
  load      our loader: libyaml parse and compose, values and line numbers kept;
  pipeline  load + decode (unknown fields) + CRD defaults + schema + CEL + our rules;
  + pods    the same plus the pod previews (the pods each ModelServing makes, through our pod rules).

The CRDs are those of --crds (repeatable; default SERVINGGATE_CRDS, else the repository's own test
fixtures, tests/fixtures/crds): give Kthena's chart `crds/` folder to time against the real
ModelServing CRD, whose pod template schema is far larger. They are read once, outside the
timing; each timed run builds its catalog again, so schemas are compiled in every round.

Target (issue 10): pipeline under 1 s. Usage: python benchmarks/check.py [--rounds 3] [--count 500] [--crds PATH]
Prints figures; it passes or fails nothing.
"""

from __future__ import annotations

import argparse
import copy
import io
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASE = REPO / "tests" / "fixtures" / "verdicts" / "cases" / "ms-valid.yaml"
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from webhook.check import catalog, run  # noqa: E402
from webhook.check.loading import load  # noqa: E402
from webhook.crds import scan  # noqa: E402
from webhook.policies.settings import PolicySettings  # noqa: E402


def manifests(count: int) -> str:
    base = yaml.safe_load(BASE.read_text())
    for role in base["spec"]["template"]["roles"]:
        for which in ("entryTemplate", "workerTemplate"):
            container = role[which]["spec"]["containers"][0]
            container["env"] = [{"name": "MODEL", "value": "deepseek-r1-distill-qwen-1.5b"}, {"name": "TP", "value": "2"}]
            container["ports"] = [{"name": "http", "containerPort": 8000}]

    docs = []
    for i in range(count):
        doc = copy.deepcopy(base)
        doc["metadata"]["name"] = f"llm-{i}"
        docs.append(doc)
    return yaml.safe_dump_all(docs, sort_keys=False)


def best(rounds: int, fn) -> float:
    """CPU seconds of this process (best of `rounds`): wall time on a shared machine also counts
    whatever else runs, CPU time only what this process did on its one core."""
    times = []
    for _ in range(rounds):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--crds", action="append", default=None, metavar="PATH", help="CRD file or folder (repeatable)")
    args = parser.parse_args()
    paths = args.crds or [p for p in os.environ.get("SERVINGGATE_CRDS", "").split(os.pathsep) if p] or [str(REPO / "tests" / "fixtures" / "crds")]
    known = catalog.build(paths)
    crds = [(f.crd, str(f.file)) for f in scan([Path(p) for p in paths]).crds]  # read once: the timed runs start from these
    print(f"CRDs: {', '.join(sorted(known.origins))} from {', '.join(paths)}")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    text = manifests(args.count)
    settings = PolicySettings()
    results, problems = run(["-"], [], settings, crds=catalog.build([], crds), stdin=io.StringIO(text))
    assert not problems and len(results) == args.count and all(r.status == "allowed" for r in results), "the manifests must pass"

    figures = {
        "baseline yaml.safe_load_all (pure Python)": best(1, lambda: list(yaml.safe_load_all(text))),
        "baseline yaml.load_all, CSafeLoader": best(args.rounds, lambda: list(yaml.load_all(text, Loader=yaml.CSafeLoader))),
        "load with line numbers (ours)": best(args.rounds, lambda: load(["-"], io.StringIO(text))),
        "whole pipeline, no pod previews": best(
            args.rounds, lambda: run(["-"], [], settings, crds=catalog.build([], crds), previews=False, stdin=io.StringIO(text))
        ),
        "whole pipeline + pod previews": best(args.rounds, lambda: run(["-"], [], settings, crds=catalog.build([], crds), stdin=io.StringIO(text))),
    }
    print(f"{args.count} ModelServings, {len(text) / 1e6:.2f} MB of YAML, one core, CPU time, best of {args.rounds}")
    for name, seconds in figures.items():
        print(f"  {name:<45} {seconds * 1000:8.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
