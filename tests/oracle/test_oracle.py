"""The differential oracle: our `modelservings.pod-templates` against real kube-apiservers, per
Kubernetes minor, on every case of `cases.all_cases` (the corpus and generated variants).

- Replayed on every run from tests/fixtures/oracle/verdicts.json (recorded by record.py beside
  this file): at every recorded version, ours is never stricter than the server, and ours is
  looser exactly where `looser.json` says, each with its reason. A case we come to judge right
  fails the second check too, so the list is kept true.
- Live, when SERVINGGATE_ORACLE_KUBECONFIGS names servers (`1.28=PATH,1.37=PATH`): the same cases
  sent now; a server that does not answer is skipped by name, the others still run.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from cases import all_cases
from harness import ENV, MODES, RECORDED, Judged, load_recorded, ours, replay, servers_from_env, tally

LOOSER = Path(__file__).resolve().parents[1] / "fixtures" / "oracle" / "looser.json"
RECORDING = load_recorded()
VERSIONS = sorted(RECORDING.get("servers", {}), key=lambda v: tuple(map(int, v.split("."))))
KNOWN_LOOSER: dict[str, dict[str, str]] = json.loads(LOOSER.read_text()) if LOOSER.exists() else {}
MIN_CASES = 2000


@cache
def _replayed(version: str) -> dict[str, list]:
    return tally(replay(RECORDING, version))


def _show(rows: list, limit: int = 15) -> str:
    return "\n".join(f"  {case.id} [{mode}]: server {server.causes or 'allowed'} / ours {mine.causes or 'allowed'}" for case, mode, server, mine in rows[:limit])


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
def test_looser_exactly_where_listed(version):
    found = _replayed(version)
    looser = {f"{case.id} [{mode}]" for case, mode, _, _ in found["looser"]}
    listed = KNOWN_LOOSER.get(version, {})
    assert all(listed.values()), "every listed case says why"
    new = sorted(looser - set(listed))
    fixed = sorted(set(listed) - looser)
    assert not new and not fixed, f"looser and not listed: {new[:20]}\nlisted but no longer looser: {fixed[:20]}"


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
