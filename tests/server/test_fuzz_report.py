"""The fuzz benchmark's memory verdict (benchmarks/fuzz.py): each worker on its own, judged by its
highest reading after the warm-up, so memory a worker gives back later still counts."""

from __future__ import annotations

import sys

from support import REPO  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from fuzz import RssSeries  # noqa: E402


def series(*rows: dict[int, int]) -> RssSeries:
    rss = RssSeries(server_pid=0, warmup=6000, every=5000)
    rss.points = [(6000 + 5000 * n, {pid: mib * 1024 for pid, mib in row.items()}) for n, row in enumerate(rows)]
    return rss


def test_a_worker_that_swells_and_shrinks_back_fails_by_its_highest_reading():
    report = "\n".join(series({1: 60, 2: 60}, {1: 90, 2: 61}, {1: 60, 2: 61}).report())
    assert "worker 1" in report and "highest 90.0 (+50.0%)" in report
    assert "worst worker       +50.0% at its highest reading (OVER the 10% target)" in report


def test_one_worker_growing_is_not_hidden_by_the_total():
    report = "\n".join(series({1: 100, 2: 100}, {1: 104, 2: 90}, {1: 112, 2: 88}).report())
    assert "all workers        200.0 -> 200.0 MiB (+0.0%)" in report
    assert "worker 1        100.0 -> 112.0 MiB (+12.0%)" in report and "still growing" in report
    assert "OVER the 10% target" in report


def test_flat_workers_pass_and_are_called_plateaued():
    report = "\n".join(series({1: 60, 2: 62}, {1: 62, 2: 63}, {1: 61, 2: 63}).report())
    assert report.count("plateaued") == 2 and "under the 10% target" in report
