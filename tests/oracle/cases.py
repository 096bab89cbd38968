"""The oracle's cases (each named by its topic and a hash of its spec, so a recording survives
changes to the strategies): every pod template of the recorded corpus (tests/fixtures/podspecs), and
`PER_TOPIC` drawn templates of each topic of `support.podvariants`, the same list on every run
(hypothesis, derandomized, no example database), duplicates dropped."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness import Case
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support import FIXTURES
from support.podvariants import TOPICS

PER_TOPIC = 180


def corpus_cases() -> list[Case]:
    cases = json.loads((FIXTURES / "podspecs" / "corpus.json").read_text())["cases"]
    out = []
    for c in cases:
        role = c["modelserving"]["spec"]["template"]["roles"][0]
        template = role[c["template_field"]]
        if c["template_field"] != "entryTemplate":
            continue  # the worker form of a case is the same pod spec
        out.append(Case(f"corpus/{c['name']}", "corpus", template.get("spec"), template.get("metadata")))
    return out


def drawn(topic: str, count: int = PER_TOPIC) -> list[Case]:
    """`count` distinct templates of `topic` (fewer when the topic has fewer distinct ones)."""
    seen: dict[str, Any] = {}
    strategy = TOPICS[topic]

    @settings(derandomize=True, database=None, max_examples=count * 3, phases=[Phase.generate], suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        spec = data.draw(strategy)  # always drawn: hypothesis wants every run to draw alike
        if len(seen) < count:
            seen.setdefault(json.dumps(spec, sort_keys=True), spec)

    collect()
    return [Case(f"{topic}/{hashlib.sha1(key.encode()).hexdigest()[:10]}", topic, spec) for key, spec in seen.items()]


def all_cases() -> list[Case]:
    return corpus_cases() + [c for topic in TOPICS for c in drawn(topic)]
