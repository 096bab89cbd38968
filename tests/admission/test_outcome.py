"""`status_of`: the one mapping from a request and a decision to the failure it answers with, which
the review response writes and `check` reads."""

from __future__ import annotations

from webhook.admission import FieldPath, Request, denied, invalid, make_request, refused, required, review_response, status_of
from webhook.admission.decision import Decision, RuleNote
from webhook.admission.status import Cause, Details, Status

MS = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "metadata": {"name": "llm", "namespace": "ns"}}


def _request() -> Request:
    return make_request(MS, uid="u-7")


def _decided(*verdicts) -> Decision:
    decision = Decision("validate", rules=("r1",))
    for v in verdicts:
        decision.add("r1", v)
    return decision


def test_an_allowed_decision_has_no_status():
    assert status_of(_request(), _decided(denied())) is None


def test_field_errors_are_422_with_one_cause_each():
    e1 = invalid(FieldPath.of("spec", "replicas"), -1, "must be a non-negative integer")
    e2 = required(FieldPath.of("spec", "template", "roles"))
    status = status_of(_request(), _decided(denied(e1, e2)))
    assert status == Status(
        422,
        'ModelServing.workload.serving.volcano.sh "llm" is invalid: '
        "[spec.replicas: Invalid value: -1: must be a non-negative integer, spec.template.roles: Required value]",
        "Invalid",
        Details(
            "llm",
            "workload.serving.volcano.sh",
            "ModelServing",
            (
                Cause("FieldValueInvalid", "Invalid value: -1: must be a non-negative integer", "spec.replicas"),
                Cause("FieldValueRequired", "Required value", "spec.template.roles"),
            ),
        ),
    )


def test_a_refusal_is_403_and_a_crash_500_naming_the_rule():
    status = status_of(_request(), _decided(refused("not while the gang is running")))
    assert status == Status(403, "not while the gang is running", "Forbidden")
    crashed = Decision("validate", crash=RuleNote("r9", "raised an exception"))
    status = status_of(_request(), crashed)
    assert status is not None and (status.code, status.reason_text) == (500, "InternalError")
    assert status.message == "internal error in rule r9; the webhook log has the details (review uid u-7)"


def test_the_review_response_carries_exactly_that_status():
    req = _request()
    for decision in (
        _decided(denied(required(FieldPath.of("spec")))),
        _decided(refused("no")),
        Decision("mutate", crash=RuleNote("r9", "raised an exception")),
    ):
        status = status_of(req, decision)
        assert status is not None
        assert review_response(req, decision)["response"]["status"] == status.review_dict()
