"""`audit` of 10,000 ModelServings (and the AutoscalingPolicies beside them) against the fake API
server (tests/fakes/apiserver.py), which runs in a child process so that neither its CPU nor its
copies of the objects are counted here.

The objects are Kthena's gang example and a homogeneous AutoscalingPolicy (tests/fixtures/
admission), renamed; 1 ModelServing in 100 has an image with a space, which modelservings.kthena.images refuses. Measured in the same run, with the same
pages (limit 500, continue tokens), best of --rounds:

  baseline list      every audited kind listed page by page, each page decoded and dropped;
  baseline store     the looked-up kinds listed into the ProjectionStore, nothing judged;
  audit              the whole run: the store, then every kind listed again and judged;

each as wall time and as CPU time of this process, then the peak of Python's allocations
(tracemalloc, a separate pass: it slows everything down) for the baseline list and the audit.
Usage: python benchmarks/audit.py [--count 10000] [--rounds 3]. Prints figures; passes nothing.
"""

from __future__ import annotations

import argparse
import copy
import multiprocessing
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from fakes.apiserver import FakeAPI  # noqa: E402
from kubernetes import client  # noqa: E402
from support import load_admission  # noqa: E402

from webhook.audit.auditing import (
    audit,  # noqa: E402
    fill,  # noqa: E402
)
from webhook.audit.kinds import audited_kinds  # noqa: E402
from webhook.audit.listing import Lister  # noqa: E402
from webhook.policies import PolicySettings  # noqa: E402
from webhook.policies.store import ProjectionStore  # noqa: E402


def _serve(count: int, conn) -> None:  # a multiprocessing pipe end
    base = load_admission("modelservings-create-gang-example-validating")["request"]["object"]
    api = FakeAPI().start()
    for kind in audited_kinds():
        api.install_custom(kind.group, kind.resource)
    for i in range(count):
        ms = copy.deepcopy(base)
        ms["metadata"] = {"name": f"llm-{i}", "namespace": f"team-{i % 20}", "uid": f"uid-{i}"}
        if i % 100 == 7:
            ms["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["image"] = "nginx latest"
        api.add_custom(ms)
    policy = load_admission("autoscalingpolicies-create-homogeneous-validating")["request"]["object"]
    for i in range(count // 10):
        p = copy.deepcopy(policy)
        p["metadata"] = {"name": f"policy-{i}", "namespace": f"team-{i % 20}"}
        api.add_custom(p)
    api.history.clear()  # no watch will read it; the child's memory is not ours anyway
    conn.send(api.url)
    conn.recv()  # until the parent is done
    api.close()


def _client(url: str) -> client.ApiClient:
    conf = client.Configuration()
    conf.host = url
    return client.ApiClient(conf)


def list_only(lister: Lister) -> int:
    n = 0
    for kind in audited_kinds():
        for page in lister.pages(kind.group, kind.version, kind.resource):
            n += len(page)
    return n


def store_only(lister: Lister) -> int:
    store = ProjectionStore()
    fill(store, lister)
    return sum(s.objects for s in store.states())


def timed(rounds: int, fn) -> tuple[float, float]:
    """(wall, CPU of this process) seconds, best of `rounds`."""
    walls, cpus = [], []
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def peak(fn) -> float:
    """MiB: the peak of Python's allocations while `fn` runs."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.Process(target=_serve, args=(args.count, theirs), daemon=True)
    child.start()
    url = ours.recv()
    try:
        lister = Lister(_client(url))
        settings = PolicySettings()
        run = audit(lister, settings)
        assert sum(run.objects.values()) == args.count + args.count // 10, run.objects
        assert len(run.judged) == args.count // 100, len(run.judged)
        figures = {
            "baseline: list every kind, drop the pages": timed(args.rounds, lambda: list_only(lister)),
            "baseline: list the looked-up kinds into the store": timed(args.rounds, lambda: store_only(lister)),
            "audit: store, then list and judge every kind": timed(args.rounds, lambda: audit(lister, settings)),
        }
        memory = {"baseline: list every kind, drop the pages": peak(lambda: list_only(lister)), "audit": peak(lambda: audit(lister, settings))}
    finally:
        ours.send("done")
        child.join(10)
    print(
        f"{args.count} ModelServings + {args.count // 10} AutoscalingPolicies in 20 namespaces, pages of 500, "
        f"{len(run.judged)} refused; fake API server in another process; best of {args.rounds}"
    )
    for name, (wall, cpu) in figures.items():
        print(f"  {name:<50} {wall:6.2f} s wall  {cpu:6.2f} s CPU here")
    for name, mib in memory.items():
        print(f"  peak Python allocations, {name:<42} {mib:6.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
