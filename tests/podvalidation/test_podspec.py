"""Pod-level fields, the order of checks, and templates rooted at their own path."""

from support.pods import BASE_POD, errors_of, pod_with

from webhook.admission.fields import FieldPath
from webhook.podvalidation import apply_template_defaults, validate_pod_template_spec


def test_restart_and_dns_policy():
    assert errors_of(pod_with(restartPolicy="Sometimes")) == [
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
    ]
    assert errors_of(pod_with(dnsPolicy="None")) == ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]
    assert errors_of(pod_with(dnsConfig={"nameservers": ["1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4"]})) == [
        'spec.dnsConfig.nameservers: Invalid value: []string{"1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4"}: must not have more than 3 nameservers'
    ]


def test_hostname_deadline_and_names_of_other_objects():
    assert errors_of(pod_with(subdomain="bad.sub")) == ['spec.subdomain: Invalid value: "bad.sub": must not contain dots']
    assert errors_of(pod_with(activeDeadlineSeconds=0)) == ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"]
    assert errors_of(pod_with(priorityClassName="Bad"))[0].startswith('spec.priorityClassName: Invalid value: "Bad"')


def test_errors_come_in_upstream_order():
    pod = pod_with(restartPolicy="No", tolerations=[{"operator": "Bad"}], volumes=[{"name": "V"}])
    pod["metadata"]["labels"] = {"a": "-"}
    fields = [e.split(":")[0] for e in errors_of(pod)]
    assert fields == ["metadata.labels", "spec.volumes[0].name", "spec.restartPolicy", "spec.tolerations[0].operator", "spec.tolerations[0].operator"]


def test_a_template_is_rooted_at_its_path_and_keeps_upstream_metadata_paths():
    template = {"metadata": {"labels": {"a": "-"}}, "spec": {"containers": [{"name": "Main", "image": "x:1"}]}}
    root = FieldPath.of("spec", "template", "roles").index(0).child("entryTemplate")
    errs = [e.field for e in validate_pod_template_spec(apply_template_defaults(template), root)]
    assert errs == ["spec.template.roles[0].entryTemplate.labels", "spec.template.roles[0].entryTemplate.spec.containers[0].name"]
    as_pod = [e.field for e in validate_pod_template_spec(apply_template_defaults(template), root, is_pod=True)]
    assert as_pod[0] == "spec.template.roles[0].entryTemplate.metadata.labels"


def test_a_template_on_the_host_network_may_leave_host_ports_unset():
    template = {"spec": {"hostNetwork": True, "containers": [{"name": "m", "image": "x:1", "ports": [{"containerPort": 80}]}]}}
    assert validate_pod_template_spec(apply_template_defaults(template), FieldPath.of("t")) == []
    errs = validate_pod_template_spec(apply_template_defaults(template), FieldPath.of("t"), is_pod=True)
    assert [str(e) for e in errs] == ["t.spec.containers[0].ports[0].hostPort: Invalid value: 0: must match `containerPort` when `hostNetwork` is true"]


def test_valid_pod_has_no_errors_and_body_is_the_status_cause_message():
    assert errors_of(BASE_POD) == []
    pod = pod_with(restartPolicy="x")
    from webhook.podvalidation import apply_pod_defaults, validate_pod_create

    err = validate_pod_create(apply_pod_defaults(pod))[0]
    assert (err.field, err.body()) == ("spec.restartPolicy", 'Unsupported value: "x": supported values: "Always", "OnFailure", "Never"')


def test_a_check_runs_first_without_paths_and_again_at_its_path_only_when_it_finds_something():
    from webhook.podvalidation.errors import located, required

    seen: list[FieldPath] = []

    def check(path: FieldPath) -> list:
        seen.append(path.child("a").index(0).key("k"))
        return [required(path.child("x"))] if fail else []

    fail = False
    assert located(check, FieldPath.of("spec")) == [] and len(seen) == 1 and seen[0].parts == ()
    fail = True
    assert [str(e.path) for e in located(check, FieldPath.of("spec"))] == ["spec.x"]
    assert str(seen[-1]) == "spec.a[0][k]"


def test_share_process_namespace_with_host_pid_whatever_the_security_context():
    """An empty (the default) and a filled pod security context both reach the host check."""
    import copy

    for context in (None, {}, {"runAsUser": 1000}):
        pod = copy.deepcopy(BASE_POD)
        pod["spec"].update(shareProcessNamespace=True, hostPID=True)
        if context is not None:
            pod["spec"]["securityContext"] = context
        assert errors_of(pod) == ["spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"]
