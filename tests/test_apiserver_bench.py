"""The end-to-end benchmark (benchmarks/apiserver_pods.py): its summary (every round of a kind
pooled, each pair of webhooks compared at p99 with an interval from redrawing the rounds), the pods
it creates and the Go peer that patches them as we do, and what a round reads from /proc for any
webhook."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys

from support import REPO  # noqa: E402

from webhook.admission.review import make_request
from webhook.policies import Context, engine

sys.path.insert(0, str(REPO / "benchmarks"))
from apiserver_pods import pod, pooled  # noqa: E402
from support.procfs import listening_pids, passive_opens  # noqa: E402


def rounds(shift: dict[str, float], count: int = 8, seed: int = 3) -> list[dict]:
    """Each kind's 400 creates per round: one round-wide swing shared by every kind of that round
    (the machine's state), plus the kind's own shift and per-create noise."""
    draw, results = random.Random(seed), []
    for k in range(1, count + 1):
        swing = draw.uniform(0, 100)
        for label, ms in shift.items():
            results.append({"label": label, "round": k, "ms": sorted(100 + swing + ms + draw.expovariate(1 / 30) for _ in range(400))})
    return results


def compared(summary: str, a: str, b: str) -> tuple[float, float, float]:
    line = re.search(rf"^{a} minus {b} at p99, pooled: ([-+][\d.]+) ms; .* within ([-+][\d.]+) \.\. ([-+][\d.]+) ms$", summary, re.M)
    assert line, summary
    return float(line[1]), float(line[2]), float(line[3])


def test_a_steady_difference_is_found_with_an_interval_around_it():
    summary = pooled(rounds({"none": 0, "slow": 40, "fast": 0}), ["none", "slow", "fast"])
    diff, low, high = compared(summary, "slow", "fast")
    assert 25 < diff < 55 and low <= diff <= high and low > 0  # the round-wide swing cancels out
    assert re.search(r"^\s+slow: p50 +\+[34]\d\.\d", summary, re.M)  # added to `none`, pooled


def test_two_equal_webhooks_get_an_interval_that_holds_zero():
    _, low, high = compared(pooled(rounds({"none": 0, "a": 20, "b": 20}), ["none", "a", "b"]), "a", "b")
    assert low < 0 < high


def test_a_kind_missing_a_round_is_left_out_and_without_none_there_is_no_summary():
    results = rounds({"none": 0, "a": 10, "b": 10})
    results = [r for r in results if not (r["label"] == "b" and r["round"] == 2)]
    summary = pooled(results, ["none", "a", "b"])
    assert "a:" in summary and " b:" not in summary and "minus" not in summary  # one webhook left: no pair
    assert pooled([r for r in results if r["label"] != "none"], ["a", "b"]) == ""


def test_the_kthena_pod_is_the_recorded_entry_pod_less_what_the_api_server_would_refuse_or_add():
    made = pod("p-00001", "kthena")
    assert made["metadata"]["name"] == "p-00001" and "namespace" not in made["metadata"]
    assert made["metadata"]["labels"]["modelserving.volcano.sh/role"] == "prefill"  # in scope of the pod rules
    assert "ownerReferences" not in made["metadata"]  # the garbage collector would delete an orphan
    spec = made["spec"]
    assert not {"volumes", "serviceAccountName", "priority", "nodeName"} & set(spec)  # admission adds or refuses these
    assert all("volumeMounts" not in c for c in spec["containers"]) and spec["containers"][0]["env"]
    assert spec.get("schedulerName") != "volcano"  # left for ServingGate to set: the proof it was in the path
    assert pod("p-00001")["spec"]["containers"] == [{"name": "main", "image": "busybox"}]


def _defaulted(made: dict) -> dict:
    """The pod as the API server sends it to a mutating webhook: defaulted first."""
    made["spec"].setdefault("schedulerName", "default-scheduler")
    return made


def test_the_go_peer_patches_the_tiny_pod_as_we_do_and_the_settled_pod_needs_no_patch():
    """`allowall -patch` is the Go peer whose answers cost the API server what ours do: its patch,
    written in main.go, must stay the one our engine makes for the tiny pod. The `settled` pod
    already carries that, so ours allows it unchanged, as agnhost's /mutating-pods does."""
    go = (REPO / "benchmarks/allowall/main.go").read_text()
    written = "".join(re.findall(r"`([^`]*)`", go[go.index("tinyPatch :=") :].split(")\n")[0]))
    ours = engine.mutate(make_request(_defaulted(pod("p-00001", "tiny"))), Context())
    assert ours.patch and json.loads(written) == ours.patch
    settled = engine.mutate(make_request(_defaulted(pod("p-00001", "settled"))), Context())
    assert settled.allowed and settled.patch == []


# ---- what a round counts for any webhook: its CPU and the connections it accepted --------------


def test_listening_pids_finds_the_process_holding_a_listener() -> None:
    """The benchmark charges a webhook's CPU to the processes listening on its port, whatever
    language it is written in. A process holding only an accepted connection on that port (same
    local port, not listening) is no listener."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        assert listening_pids(port) == [os.getpid()]
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = listener.accept()
            holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], pass_fds=[accepted.fileno()])
            try:
                accepted.close()  # only the other process holds it now
                assert listening_pids(port) == [os.getpid()]
            finally:
                holder.kill()
                holder.wait()
    assert listening_pids(port) == []


def test_passive_opens_counts_accepted_connections_only() -> None:
    """Connections this machine accepted, not those it opened: a refused connect is an active open
    and never a passive one."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        before = passive_opens()
        clients = [socket.create_connection(listener.getsockname()) for _ in range(3)]
        accepted = [listener.accept()[0] for _ in clients]
        assert passive_opens() - before >= 3  # other processes of the machine may accept too
        for s in clients + accepted:
            s.close()
        closed_port = listener.getsockname()[1]
    before = passive_opens()
    for _ in range(20):
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", closed_port)) != 0
    assert passive_opens() - before < 20
