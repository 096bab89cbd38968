"""The v1 defaults that validation sees."""

from support.pods import BASE_POD, pod_with

from webhook.podvalidation import apply_pod_defaults, apply_template_defaults
from webhook.podvalidation.defaults import image_tag


def test_pod_spec_and_container_defaults():
    spec = apply_pod_defaults(
        pod_with(containers=[{"name": "m", "image": "busybox", "ports": [{"containerPort": 80}], "livenessProbe": {"httpGet": {"port": 80}}}])
    )["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["schedulerName"]) == ("Always", "ClusterFirst", "default-scheduler")
    assert spec["securityContext"] == {} and spec["enableServiceLinks"] is True and spec["terminationGracePeriodSeconds"] == 30
    c = spec["containers"][0]
    assert (c["imagePullPolicy"], c["terminationMessagePath"], c["terminationMessagePolicy"]) == ("Always", "/dev/termination-log", "File")
    assert c["ports"][0]["protocol"] == "TCP"
    assert c["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


def test_pull_policy_follows_the_tag():
    assert image_tag("busybox") == "latest" and image_tag("busybox:latest") == "latest"
    assert image_tag("busybox:1.36") == "1.36" and image_tag("reg.io:5000/a/b") == "latest"
    assert image_tag("busybox@sha256:abc") == "" and image_tag("Busybox") == ""


def test_limits_stand_in_for_requests_in_pods_only():
    pod = pod_with(containers=[{"name": "m", "image": "x:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}])
    assert apply_pod_defaults(pod)["spec"]["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "1"}
    template = apply_template_defaults({"spec": pod["spec"]})
    assert "requests" not in template["spec"]["containers"][0]["resources"]


def test_defaults_copy_and_leave_bad_shapes_alone():
    assert apply_pod_defaults("x") == "x" and apply_pod_defaults({"spec": []}) == {"spec": []}
    original = pod_with()
    apply_pod_defaults(original)
    assert original == pod_with() and BASE_POD["spec"] == {"containers": [{"name": "main", "image": "busybox:1.36"}]}


def test_gated_fields_are_dropped():
    pod = pod_with(initContainers=[{"name": "i", "image": "x:1", "restartPolicy": "Always"}], hostUsers=False)
    spec = apply_pod_defaults(pod)["spec"]
    assert "restartPolicy" not in spec["initContainers"][0] and "hostUsers" not in spec
