"""The differential oracle: our `modelservings.pod-templates` against real kube-apiservers, per
Kubernetes minor, on every case of `cases.all_cases` (the corpus and generated variants).

- Replayed on every run from tests/fixtures/oracle/verdicts.json.gz (recorded by record.py beside
  this file): at every recorded version, ours is never stricter than the server, and ours is
  looser only where `LOOSER_BECAUSE` gives the reason, and each reason is still seen (a reason
  we come to judge right must go from the list).
- Live, when SERVINGGATE_ORACLE_KUBECONFIGS names servers (`1.28=PATH,1.37=PATH`): the same cases
  sent now; a server that does not answer is skipped by name, the others still run.
"""

from __future__ import annotations

import os
from collections import Counter
from functools import cache

import pytest
from cases import all_cases
from harness import DOCS, ENV, LOOSER_BECAUSE, MODES, RECORDED, Judged, because, docs_table, load_recorded, ours, replay, servers_from_env, tally

RECORDING = load_recorded()
VERSIONS = sorted(RECORDING.get("servers", {}), key=lambda v: tuple(map(int, v.split("."))))
MIN_CASES = 2000


@cache
def _replayed(version: str) -> dict[str, list]:
    return tally(replay(RECORDING, version))


def _show(rows: list, limit: int = 15) -> str:
    return "\n".join(
        f"  {case.id} [{mode}]: server {server.causes or 'allowed'} / ours {mine.causes or 'allowed'}" for case, mode, server, mine in rows[:limit]
    )


def test_every_recorded_version_has_enough_cases():
    assert VERSIONS, f"no recorded verdicts in {RECORDED}"
    for version in VERSIONS:
        counted = sum(1 for c in RECORDING["cases"] if version in c["verdicts"])
        assert counted >= MIN_CASES, f"{version}: {counted} cases recorded"


@pytest.mark.parametrize("version", VERSIONS)
def test_never_stricter_than_the_recorded_server(version):
    found = _replayed(version)
    assert not found["stricter"], f"{len(found['stricter'])} cases ours refuses and kube-apiserver {version} admits:\n{_show(found['stricter'])}"


@pytest.mark.parametrize("version", VERSIONS)
def test_looser_only_for_a_listed_reason(version):
    unexplained = [row for row in _replayed(version)["looser"] if because(row[0], row[2]) is None]
    assert not unexplained, f"{len(unexplained)} cases ours admits and kube-apiserver {version} refuses, with no reason listed:\n{_show(unexplained)}"


def test_every_listed_reason_is_still_seen():
    seen = {because(case, server) for version in VERSIONS for case, _, server, _ in _replayed(version)["looser"]}
    assert [key for key in LOOSER_BECAUSE if key not in seen] == []


def test_a_case_id_names_one_spec():
    ids = Counter(c["id"] for c in RECORDING.get("cases", []))
    assert ids and max(ids.values()) == 1


SERVERS, SKIPPED = servers_from_env(os.environ.get(ENV))


@pytest.mark.skipif(not os.environ.get(ENV), reason=f"{ENV} names no API server (e.g. 1.28=PATH,1.37=PATH)")
def test_live_servers_answer():
    assert SERVERS, f"no server answered: {SKIPPED}"
    for s in SKIPPED:
        print(f"skipped: {s}")


@pytest.mark.skipif(not SERVERS, reason=f"{ENV} names no API server that answers: {SKIPPED or 'unset'}")
@pytest.mark.parametrize("server", SERVERS, ids=lambda s: s.label)
def test_never_stricter_than_a_live_server(server):
    server.prepare()
    rows: list[tuple] = []
    for case in all_cases():
        for mode in MODES:
            theirs: Judged = server.judge(case, mode)
            rows.append((case, mode, theirs, ours(case, server.version, mode)))
    found = tally(rows)
    print(f"{server.label}: {len(found['agree'])} agree, {len(found['stricter'])} stricter, {len(found['looser'])} looser")
    assert not found["stricter"], _show(found["stricter"])


def test_the_docs_say_what_the_recording_shows():
    """docs/policies.md's table of the oracle per version is the replay of the recording
    (`record.py --docs` rewrites it)."""
    assert docs_table(RECORDING, _replayed) in DOCS.read_text()
