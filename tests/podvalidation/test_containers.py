"""Containers, init containers, ephemeral containers, ports and env."""

from support.pods import container_pod, errors_of, pod_with

MAIN = {"name": "main", "image": "busybox:1.36"}


def test_names_are_unique_across_containers_and_init_containers():
    assert errors_of(pod_with(initContainers=[dict(MAIN)])) == ['spec.initContainers[0].name: Duplicate value: "main"']


def test_image_is_required_and_may_not_carry_whitespace():
    assert errors_of(container_pod(image="")) == ["spec.containers[0].image: Required value"]
    assert errors_of(container_pod(image=" busybox")) == ['spec.containers[0].image: Invalid value: " busybox": must not have leading or trailing whitespace']


def test_ports_range_protocol_and_names():
    errs = errors_of(
        container_pod(
            ports=[
                {"containerPort": 0},
                {"containerPort": 70000, "protocol": "tcp"},
                {"name": "http", "containerPort": 80},
                {"name": "http", "containerPort": 81},
            ]
        )
    )
    assert errs == [
        "spec.containers[0].ports[0].containerPort: Required value",
        "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        'spec.containers[0].ports[1].protocol: Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"',
        'spec.containers[0].ports[3].name: Duplicate value: "http"',
    ]


def test_host_ports_conflict_across_containers_and_must_match_on_the_host_network():
    second = {"name": "b", "image": "x:1", "ports": [{"containerPort": 81, "hostPort": 9000}]}
    pod = container_pod(ports=[{"containerPort": 80, "hostPort": 9000}])
    pod["spec"]["containers"].append(second)
    assert errors_of(pod) == ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//9000"']
    hostnet = container_pod(ports=[{"containerPort": 80, "hostPort": 8080}])
    hostnet["spec"]["hostNetwork"] = True
    assert errors_of(hostnet) == ["spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"]


def test_env_value_and_value_from_and_each_source():
    errs = errors_of(
        container_pod(
            env=[
                {"name": "1BAD", "value": "x"},
                {"name": "A", "value": "1", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "B", "valueFrom": {}},
                {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s"}}},
            ]
        )
    )
    assert errs[0].startswith('spec.containers[0].env[0].name: Invalid value: "1BAD": a valid environment variable name')
    assert errs[1:] == [
        'spec.containers[0].env[1].valueFrom: Invalid value: "": may not be specified when `value` is not empty',
        'spec.containers[0].env[2].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`',
        "spec.containers[0].env[3].valueFrom.secretKeyRef.key: Required value",
    ]


def test_env_from_needs_exactly_one_source():
    assert errors_of(container_pod(envFrom=[{}])) == ['spec.containers[0].envFrom: Invalid value: "": must specify one of: `configMapRef` or `secretRef`']


def test_init_containers_may_not_probe_and_app_containers_may_not_restart():
    init = {"name": "init", "image": "x:1", "readinessProbe": {"exec": {"command": ["true"]}}}
    assert errors_of(pod_with(initContainers=[init])) == [
        "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"
    ]
    assert errors_of(container_pod(restartPolicy="Always")) == ["spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"]


def test_ephemeral_containers_cannot_be_set_on_create():
    errs = errors_of(pod_with(ephemeralContainers=[{"name": "main", "image": "x:1", "ports": [{"containerPort": 80}]}]))
    assert errs == [
        'spec.ephemeralContainers[0].name: Duplicate value: "main"',
        "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers: Forbidden: cannot be set on create",
    ]


def test_pull_policy_and_termination_message_policy():
    assert errors_of(container_pod(imagePullPolicy="always")) == [
        'spec.containers[0].imagePullPolicy: Unsupported value: "always": supported values: "Always", "IfNotPresent", "Never"'
    ]
    assert errors_of(container_pod(terminationMessagePolicy="Logs")) == [
        'spec.containers[0].terminationMessagePolicy: Unsupported value: "Logs": supported values: "File", "FallbackToLogsOnError"'
    ]
