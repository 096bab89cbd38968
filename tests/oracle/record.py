"""Record what real API servers say about every oracle case into tests/fixtures/oracle/verdicts.json.gz.

Run by hand, never by the test suite (CI has no control plane), with one kubeconfig per server:

    SERVINGGATE_ORACLE_KUBECONFIGS=1.28=~/k8s/run/kubeconfig,1.37=~/k8s-1.37/run/kubeconfig \\
        .venv/bin/python tests/oracle/record.py

Each case (cases.all_cases) is sent as the pod Kthena's controller would make, with `dryRun=All`,
once with the default field validation and once with `fieldValidation=Strict`; the verdicts are
kept per server version beside the cases, with the server's `gitVersion` and the date, and the
table of docs/policies.md is rewritten (`record.py --docs` rewrites only the table). A server
already recorded is replaced; the others stay. `./dev test` replays the file (test_oracle.py).
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]

from cases import all_cases  # noqa: E402
from harness import ENV, MODES, RECORDED, load_recorded, servers_from_env, write_docs_table  # noqa: E402


def main() -> None:
    if sys.argv[1:] == ["--docs"]:  # only the table of docs/policies.md, from the recording as it is
        write_docs_table(load_recorded())
        return
    servers, skipped = servers_from_env(os.environ.get(ENV))
    for s in skipped:
        print(f"skipped: {s}", file=sys.stderr)
    if not servers:
        raise SystemExit(f"{ENV} names no server that answers")
    cases = all_cases()
    old = load_recorded()
    kept = {c["id"]: c["verdicts"] for c in old.get("cases", [])}
    meta = old.get("servers", {})
    rows = []
    for server in servers:
        server.prepare()
        meta[server.label] = {"gitVersion": server.git_version(), "recorded": datetime.date.today().isoformat()}
    for n, case in enumerate(cases):
        verdicts = {v: m for v, m in kept.get(case.id, {}).items() if v not in {s.label for s in servers}}
        for server in servers:
            judged = {mode: server.judge(case, mode).as_json() for mode in MODES}
            # the two verdicts are mostly alike: kept once, as `both`
            verdicts[server.label] = {"both": judged["default"]} if judged["default"] == judged["strict"] else judged
        rows.append({**case.as_json(), "verdicts": dict(sorted(verdicts.items()))})
        if n % 200 == 0:
            print(f"{n}/{len(cases)}", file=sys.stderr)
    RECORDED.parent.mkdir(parents=True, exist_ok=True)
    out = {"about": "verdicts of real kube-apiservers on the oracle's cases: tests/oracle/record.py", "servers": dict(sorted(meta.items())), "cases": rows}
    text = json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n"
    RECORDED.write_bytes(gzip.compress(text.encode(), mtime=0))  # mtime 0: the same verdicts, the same bytes
    write_docs_table(out)
    print(f"{len(rows)} cases, servers {', '.join(s.label for s in servers)} -> {RECORDED}", file=sys.stderr)


if __name__ == "__main__":
    main()
