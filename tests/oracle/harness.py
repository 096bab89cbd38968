"""The differential oracle's two sides: what a real kube-apiserver says about the pod Kthena's
controller would make from a template, and what our `modelservings.pod-templates` says about the
ModelServing holding that template, at the server's version.

A case is a template (`spec`, and `metadata` for the corpus' cases) and the topic it was drawn
for. Each is judged twice per version, as the server would be asked:

- `default`: the controller's own create (client-go sends no `fieldValidation`, so the server
  drops a field it does not know, with a warning); ours is the rule's verdict on the ModelServing.
- `strict`: `fieldValidation=Strict`, what `kubectl apply` asks for; ours adds a refusal for each
  field the version's Pod schema lacks (what `check` does after strict decoding).

A verdict is `(allowed, code, causes)`: causes as `field: reason` strings, sorted (the server
walks maps in random order). Agreement is on allowed or refused; causes are kept for the note.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import ssl
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.podvariants import NAMESPACE, modelserving

from webhook.admission.decision import Verdict
from webhook.admission.fields import FieldPath
from webhook.admission.review import make_request
from webhook.kubeversion import KubeVersion, parse_minor
from webhook.podvalidation import drops
from webhook.podvalidation.options import options_for
from webhook.policies import Context
from webhook.policies.kthena_pods import controller_pods
from webhook.policies.modelservings import check_pod_templates

MODES = ("default", "strict")
QUERY = {"default": "dryRun=All", "strict": "dryRun=All&fieldValidation=Strict"}
ENV = "SERVINGGATE_ORACLE_KUBECONFIGS"


@dataclass(frozen=True)
class Case:
    id: str
    topic: str
    spec: Any
    metadata: dict[str, Any] | None = None

    def modelserving(self) -> dict[str, Any]:
        return modelserving(self.spec, metadata=self.metadata)

    def pod(self) -> dict[str, Any]:
        """The entry pod Kthena's controller makes from the ModelServing (kthena_pods)."""
        return next(iter(controller_pods(self.modelserving()))).pod

    def as_json(self) -> dict[str, Any]:
        out = {"id": self.id, "topic": self.topic, "spec": self.spec}
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Case:
        return cls(d["id"], d["topic"], d["spec"], d.get("metadata"))


@dataclass(frozen=True)
class Judged:
    allowed: bool
    causes: tuple[str, ...] = ()
    code: int = 0

    def as_json(self) -> list[Any]:
        return [self.allowed, self.code, list(self.causes)]

    @classmethod
    def from_json(cls, d: list[Any]) -> Judged:
        return cls(bool(d[0]), tuple(d[2]), int(d[1]))


def ours(case: Case, version: KubeVersion, mode: str) -> Judged:
    """Our verdict on the case's ModelServing at `version` (see the module docstring)."""
    found = check_pod_templates(make_request(case.modelserving(), operation="CREATE"), Context(kubernetes_version=version))
    errors = found.errors if isinstance(found, Verdict) else found
    causes = [f"{e.path}: {e.body()}" for e in errors]
    if mode == "strict" and isinstance(case.spec, dict):
        opts = options_for(version)
        prefix = FieldPath.of("spec")
        causes += [f"{prefix.child(*d.path)}: unknown field" for d in drops._walk(copy.deepcopy(case.spec), drops._plan(opts).unknown, None)]
    return Judged(not causes, tuple(sorted(causes)))


def _kind(judged: Judged) -> str:
    return "allowed" if judged.allowed else "refused"


def compare(server: Judged, mine: Judged) -> str:
    """`agree`, `stricter` (we refuse what the server admits) or `looser` (the reverse)."""
    if server.allowed == mine.allowed:
        return "agree"
    return "stricter" if server.allowed else "looser"


# ---- the server side -----------------------------------------------------------------------------


class Server:
    """One API server, reached with a kubeconfig's client certificate (as the control-plane scripts
    write it): POSTs the controller's pod with `dryRun=All`, nothing stored."""

    def __init__(self, version: str, kubeconfig: str) -> None:
        from webhook.kube import load_api_client

        conf = load_api_client(kubeconfig).configuration
        self.label = version
        self.version = parse_minor(version)
        self.base = conf.host.rstrip("/")
        ctx = ssl.create_default_context(cafile=conf.ssl_ca_cert) if conf.ssl_ca_cert else ssl.create_default_context()
        if conf.cert_file:
            ctx.load_cert_chain(conf.cert_file, conf.key_file)
        self.ssl = ctx
        self.headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if conf.api_key.get("authorization"):
            self.headers["Authorization"] = conf.api_key["authorization"]

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data, self.headers, method=method)
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def git_version(self) -> str:
        return str(self.call("GET", "/version")[1].get("gitVersion"))

    def prepare(self) -> None:
        """The namespace and its `default` ServiceAccount (the ServiceAccount admission plugin
        refuses every pod of a namespace without one), made here rather than waited for."""
        self.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        self.call("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})

    def judge(self, case: Case, mode: str) -> Judged:
        code, body = self.call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?{QUERY[mode]}", case.pod())
        if 200 <= code < 300:
            return Judged(True, (), code)
        causes = [f"{c.get('field')}: {c.get('reason')}: {c.get('message')}" for c in (body.get("details") or {}).get("causes") or []]
        if not causes:
            causes = [re.sub(r"\s+", " ", str(body.get("message")))[:500]]
        return Judged(False, tuple(sorted(causes)), code)


def servers_from_env(raw: str | None) -> tuple[list[Server], list[str]]:
    """`1.28=PATH,1.37=PATH` -> the servers that answer /version, and why each other one is left out."""
    found, skipped = [], []
    for item in filter(None, (raw or "").split(",")):
        version, _, path = item.partition("=")
        try:
            server = Server(version.strip(), path.strip())
            server.git_version()
        except Exception as e:  # a server that does not answer is named and skipped
            skipped.append(f"{item}: {type(e).__name__}: {e}")
            continue
        found.append(server)
    return found, skipped


# ---- recorded verdicts -------------------------------------------------------------------------------

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "oracle" / "verdicts.json.gz"  # gzip: 4 MB of JSON, 0.3 MB so


def load_recorded(path: Path = RECORDED) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else {}


def tally(rows: Iterable[tuple[Case, str, Judged, Judged]]) -> dict[str, list[tuple[Case, str, Judged, Judged]]]:
    out: dict[str, list[tuple[Case, str, Judged, Judged]]] = {"agree": [], "stricter": [], "looser": []}
    for row in rows:
        out[compare(row[2], row[3])].append(row)
    return out


def replay(recorded: dict[str, Any], version: str) -> Iterator[tuple[Case, str, Judged, Judged]]:
    """(case, mode, server's recorded verdict, ours now) for every recorded case at `version`."""
    minor = parse_minor(version)
    for raw in recorded["cases"]:
        case = Case.from_json(raw)
        recorded = raw["verdicts"].get(version, {})
        for mode in MODES if recorded else ():
            verdict = recorded.get(mode, recorded.get("both"))
            yield case, mode, Judged.from_json(verdict), ours(case, minor, mode)


# Where ours admits what a server refused, and why: (reason, does a row show it). Every looser row
# must have a reason, and every reason must still be seen somewhere, so the list stays true.
LOOSER_BECAUSE: dict[str, tuple[str, Callable[[Case, Judged], bool]]] = {
    "admission plugin": (
        "an admission plugin refused it from what the cluster holds (a missing ServiceAccount, PriorityClass or "
        "RuntimeClass, `priority` without its class): not knowable from a template",
        lambda case, server: any(" is forbidden: " in c for c in server.causes),
    ),
    "image spaces": (
        "an image with surrounding spaces: refused by `modelservings.kthena.images`, so this rule leaves it",
        lambda case, server: any("must not have leading or trailing whitespace" in c for c in server.causes),
    ),
}


def because(case: Case, server: Judged) -> str | None:
    """The key of the listed reason a looser row shows, or None."""
    return next((key for key, (_, shows) in LOOSER_BECAUSE.items() if shows(case, server)), None)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "policies.md"
_MARKS = ("<!-- oracle-table -->", "<!-- /oracle-table -->")


def docs_table(recorded: dict[str, Any], tallied: Callable[[str], dict[str, list[Any]]] | None = None) -> str:
    """The per-version table of docs/policies.md: what the replay of `recorded` gives, and the
    reasons it names. `tallied(version)`: the tally of that version's replay, when the caller
    has it already (each version's replay costs seconds)."""
    rows = [_MARKS[0], "| Kubernetes | server | recorded | verdicts | agree | ours stricter | ours looser, and why |", "|---|---|---|---|---|---|---|"]
    for version in sorted(recorded.get("servers", {}), key=lambda v: tuple(map(int, v.split(".")))):
        meta = recorded["servers"][version]
        found = tallied(version) if tallied is not None else tally(replay(recorded, version))
        reasons = Counter(because(case, server) or "unexplained" for case, _, server, _ in found["looser"])
        why = ", ".join(f"{n} {key}" for key, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
        total = sum(len(v) for v in found.values())
        rows.append(
            f"| {version} | {meta['gitVersion']} | {meta['recorded']} | {total} | {len(found['agree'])} | {len(found['stricter'])} | {len(found['looser'])}{f' ({why})' if why else ''} |"
        )
    rows.append("")
    rows += [f"- *{key}*: {text}" for key, (text, _) in LOOSER_BECAUSE.items()]
    rows.append(_MARKS[1])
    return "\n".join(rows)


def write_docs_table(recorded: dict[str, Any]) -> None:
    text = DOCS.read_text()
    start, end = text.index(_MARKS[0]), text.index(_MARKS[1]) + len(_MARKS[1])
    DOCS.write_text(text[:start] + docs_table(recorded) + text[end:])
