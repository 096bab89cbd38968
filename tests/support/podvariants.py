"""Generated pod templates for the differential oracle (tests/oracle): variants of every Pod field
and check that changed between Kubernetes 1.28 and 1.37, as hypothesis strategies.

Each strategy draws one template spec that differs from a minimal valid one (one container,
`busybox:1.36`) in one topic: env names over all printable ASCII, DNS search entries, IP forms,
SELinux change policies, `sleep` hooks, `fileKeyRef`, container restart rules, image volumes,
`hostnameOverride`, pod-level resources, projections, `schedulingGroup` and `workloadRef`, stop
signals, the 1.37 probe fields, resize policies, and the gated fields older minors drop. `modelserving(spec)` wraps
a spec as the ModelServing whose entry pod Kthena's controller would make from it; the oracle sends
that pod to each API server and judges the ModelServing with our rule.

Values are drawn from two sources per field: a short list of edge cases named by the release notes
or by upstream's validation (a leading digit, `_sip._tcp`, `010.0.0.1`, `::ffff:1.2.3.4`, `sleep 0`,
...) and free text or numbers around them, so a check we port too strictly or too loosely shows as
a disagreement with a real server.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F))
NAMESPACE = "oracle"


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox:1.36", **fields}


def pod_spec(*, main: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"containers": [container(**(main or {}))], **fields}


def modelserving(spec: dict[str, Any], name: str = "o", metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ModelServing whose single role's entry template is `spec` (and `metadata`)."""
    template: dict[str, Any] = {"spec": copy.deepcopy(spec)}
    if metadata:
        template["metadata"] = copy.deepcopy(metadata)
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicas": 1, "template": {"roles": [{"name": "r", "replicas": 1, "workerReplicas": 0, "entryTemplate": template}]}},
    }


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# ---- env names (RelaxedEnvironmentVariableValidation, 1.32) ----------------------------------------

ENV_NAMES = st.sampled_from(["1FOO:BAR", "FOO", "_x", "a.b", "a-b", "=x", "x=", " ", "FOO BAR", ".", "..", "-x", "é", "A" * 300]) | st.text(
    st.sampled_from(PRINTABLE), min_size=0, max_size=12
)


@st.composite
def env_names(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(ENV_NAMES)
    where = draw(st.sampled_from(["env", "envFrom-prefix", "configMapKey", "secretKey", "init-env"]))
    if where == "env":
        return pod_spec(main={"env": [{"name": name, "value": "v"}]})
    if where == "init-env":
        return pod_spec(initContainers=[container(name="init", env=[{"name": name, "value": "v"}])])
    if where == "envFrom-prefix":
        return pod_spec(main={"envFrom": [{"prefix": name, "configMapRef": {"name": "cm"}}]})
    ref = "configMapKeyRef" if where == "configMapKey" else "secretKeyRef"
    return pod_spec(main={"env": [{"name": "E", "valueFrom": {ref: {"name": "x", "key": name}}}]})


# ---- DNS (RelaxedDNSSearchValidation, 1.33; StrictIPCIDRValidation, 1.36) ---------------------------

SEARCHES = st.sampled_from(
    ["_sip._tcp.example.com", ".", "example.com.", "a..b", "-a.com", "A.COM", "a_b", "_", "", "a.b-", "x" * 64 + ".com", "*.example.com", "_a._b."]
) | st.text(st.sampled_from("ab-_.Z9*"), min_size=0, max_size=12)

_OCTET = st.integers(0, 300).map(str) | st.integers(0, 255).map(lambda n: f"{n:03d}")
IPV4 = st.lists(_OCTET, min_size=3, max_size=5).map(".".join)
IPS = (
    st.sampled_from(
        [
            "1.2.3.4",
            "010.0.0.1",
            "1.2.3.04",
            "0.0.0.0",
            "255.255.255.255",
            "::",
            "::1",
            "2001:db8::1",
            "2001:DB8::1",
            "2001:0db8:0000:0000:0000:0000:0000:0001",
            "::ffff:1.2.3.4",
            "::ffff:01.2.3.4",
            "fe80::1%eth0",
            "1.2.3.4/24",
            "1.2.3",
            "",
            " 1.2.3.4",
            "2001:db8::1/64",
            "::FFFF:1.2.3.4",
            "1:2:3:4:5:6:7:8",
            "1::2::3",
        ]
    )
    | IPV4
)


@st.composite
def dns(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["searches", "nameservers", "hostAliases", "options"]))
    if kind == "searches":
        return pod_spec(dnsConfig={"searches": draw(st.lists(SEARCHES, min_size=1, max_size=3))})
    if kind == "nameservers":
        return pod_spec(dnsPolicy="None", dnsConfig={"nameservers": draw(st.lists(IPS, min_size=1, max_size=2))})
    if kind == "options":
        option = _drop_none({"name": draw(st.sampled_from(["ndots", "", "edns0", "a b"])), "value": draw(_maybe(st.sampled_from(["1", "", "x"])))})
        return pod_spec(dnsConfig={"options": [option]})
    return pod_spec(hostAliases=[{"ip": draw(IPS), "hostnames": draw(st.lists(st.sampled_from(["h", "a.b", "UP", "_x", ""]), max_size=2))}])


# ---- SELinux (SELinuxChangePolicy 1.33, SELinuxMount GA 1.37) ---------------------------------------


@st.composite
def selinux(draw: st.DrawFn) -> dict[str, Any]:
    context = _drop_none(
        {
            "seLinuxChangePolicy": draw(_maybe(st.sampled_from(["Recursive", "MountOption", "", "recursive", "Foo"]))),
            "seLinuxOptions": draw(_maybe(st.sampled_from([{"level": "s0:c1,c2"}, {"type": "spc_t"}, {}]))),
        }
    )
    spec = pod_spec(securityContext=context)
    if draw(st.booleans()):
        spec["containers"][0]["securityContext"] = {"seLinuxOptions": {"level": "s0:c3"}}
    return spec


# ---- lifecycle hooks: sleep (0 allowed from 1.33), stop signals (1.33) -------------------------------


@st.composite
def hooks(draw: st.DrawFn) -> dict[str, Any]:
    which = draw(st.sampled_from(["preStop", "postStart"]))
    seconds = draw(st.sampled_from([-1, 0, 1, 30, 2**31]) | st.integers(-3, 5))
    handler: dict[str, Any] = {"sleep": {"seconds": seconds}}
    if draw(st.booleans()):
        handler["exec"] = {"command": ["true"]}
    lifecycle: dict[str, Any] = {which: handler}
    if draw(st.booleans()):
        lifecycle = {"stopSignal": draw(st.sampled_from(["SIGTERM", "SIGKILL", "SIGUSR1", "FOO", "", "SIGRTMIN+1"]))}
        if draw(st.booleans()):
            return pod_spec(main={"lifecycle": lifecycle}, os={"name": draw(st.sampled_from(["linux", "windows"]))})
    return pod_spec(main={"lifecycle": lifecycle})


# ---- env from files (EnvFiles, 1.34 alpha, 1.35 beta) -----------------------------------------------


@st.composite
def file_key_refs(draw: st.DrawFn) -> dict[str, Any]:
    ref = _drop_none(
        {
            "volumeName": draw(st.sampled_from(["env", "missing", "", "cfg"])),
            "path": draw(st.sampled_from(["env.txt", "/abs", "../x", "a/b.env", "", "a/../b"])),
            "key": draw(st.sampled_from(["K", "1K", "a.b", "", "K=V", "k k"])),
            "optional": draw(_maybe(st.booleans())),
        }
    )
    volumes = draw(st.sampled_from([[{"name": "env", "emptyDir": {}}], [{"name": "env", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}], []]))
    spec = pod_spec(main={"env": [{"name": "E", "valueFrom": {"fileKeyRef": ref}}]})
    if volumes:
        spec["volumes"] = volumes
    return spec


# ---- container restart rules (ContainerRestartRules, 1.34 alpha, 1.35 beta) --------------------------


@st.composite
def restart_rules(draw: st.DrawFn) -> dict[str, Any]:
    rule = _drop_none(
        {
            "action": draw(st.sampled_from(["Restart", "", "Never", None])),
            "exitCodes": draw(
                _maybe(
                    st.builds(
                        lambda op, values: _drop_none({"operator": op, "values": values}),
                        st.sampled_from(["In", "NotIn", "", "Equals"]),
                        _maybe(st.lists(st.integers(-2, 256), max_size=3)),
                    )
                )
            ),
        }
    )
    main = _drop_none(
        {"restartPolicy": draw(_maybe(st.sampled_from(["Always", "Never", "OnFailure", "", "Sometimes"]))), "restartPolicyRules": draw(_maybe(st.just([rule])))}
    )
    pod_policy = draw(_maybe(st.sampled_from(["Always", "OnFailure", "Never"])))
    extra = {"restartPolicy": pod_policy} if pod_policy else {}
    if draw(st.booleans()):
        return pod_spec(initContainers=[container(name="init", **main)], **extra)
    return pod_spec(main=main, **extra)


# ---- RestartAllContainersOnContainerExits (1.35 alpha, 1.36 beta) and the rules' bounds -------------

_RULE = {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}


@st.composite
def restart_all(draw: st.DrawFn) -> dict[str, Any]:
    """A sidecar's rules, the `RestartAllContainers` action, and more than 20 rules or 255 exit
    codes (TooLong in 1.35, TooMany from 1.36), on an app, init or sidecar container."""
    action = draw(st.sampled_from(["Restart", "RestartAllContainers", "restartAll", ""]))
    count = draw(st.sampled_from([1, 1, 2, 20, 21]))
    values = draw(st.sampled_from([[1], [0, 1, 2], list(range(255)), list(range(256))]))
    rules = [{"action": action, "exitCodes": {"operator": draw(st.sampled_from(["In", "NotIn"])), "values": values}}] + [_RULE] * (count - 1)
    kind = draw(st.sampled_from(["app", "init", "sidecar"]))
    policy = draw(_maybe(st.sampled_from(["Always", "Never", "OnFailure"]))) if kind != "sidecar" else "Always"
    fields = _drop_none({"restartPolicy": policy, "restartPolicyRules": rules})
    pod_policy = draw(_maybe(st.sampled_from(["Always", "OnFailure", "Never"])))
    extra = {"restartPolicy": pod_policy} if pod_policy else {}
    if kind == "app":
        return pod_spec(main=fields, **extra)
    return pod_spec(initContainers=[container(name="init", **fields)], **extra)


# ---- resizePolicy (InPlacePodVerticalScaling, on from 1.33; 1.36 messages and init refusal) ---------


@st.composite
def resize_policies(draw: st.DrawFn) -> dict[str, Any]:
    """A resizePolicy list (cpu, memory, unknown or empty names and policies, duplicates) on an app
    container, a plain init container or a sidecar, with or without pod `restartPolicy: Never`."""
    entry = st.builds(
        lambda name, policy: _drop_none({"resourceName": name, "restartPolicy": policy}),
        st.sampled_from(["cpu", "memory", "gpu", "", None]),
        st.sampled_from(["NotRequired", "RestartContainer", "Sometimes", "", None]),
    )
    policies = draw(st.lists(entry, min_size=1, max_size=3))
    pod_policy = draw(_maybe(st.sampled_from(["Always", "OnFailure", "Never"])))
    extra = {"restartPolicy": pod_policy} if pod_policy else {}
    kind = draw(st.sampled_from(["app", "init", "sidecar"]))
    if kind == "app":
        return pod_spec(main={"resizePolicy": policies}, **extra)
    init = container(name="init", resizePolicy=policies)
    if kind == "sidecar":
        init["restartPolicy"] = "Always"
    return pod_spec(initContainers=[init], **extra)


# ---- image volumes (ImageVolume, 1.31 alpha, 1.35 beta on) ------------------------------------------


@st.composite
def image_volumes(draw: st.DrawFn) -> dict[str, Any]:
    source = _drop_none(
        {
            "reference": draw(_maybe(st.sampled_from(["busybox:1.36", "", "quay.io/a/b@sha256:" + "a" * 64, " "]))),
            "pullPolicy": draw(_maybe(st.sampled_from(["Always", "IfNotPresent", "Never", "", "Sometimes"]))),
        }
    )
    mount = _drop_none({"name": "img", "mountPath": "/img", "readOnly": draw(_maybe(st.booleans())), "subPath": draw(_maybe(st.sampled_from(["a", "../b"])))})
    return pod_spec(main={"volumeMounts": [mount]}, volumes=[{"name": "img", "image": source}])


# ---- hostnameOverride (1.34 alpha, 1.35 beta) ------------------------------------------------------

HOSTNAMES = st.sampled_from(["node-1", "a.b.c", "UPPER", "x" * 64, "x" * 65, "-a", "a_b", "", "a..b", "1.2.3.4"]) | st.text(
    st.sampled_from("ab-._Z9"), min_size=0, max_size=10
)


@st.composite
def hostname_overrides(draw: st.DrawFn) -> dict[str, Any]:
    extra = _drop_none(
        {"setHostnameAsFQDN": draw(_maybe(st.booleans())), "hostNetwork": draw(_maybe(st.booleans())), "hostname": draw(_maybe(st.sampled_from(["h", "a.b"])))}
    )
    return pod_spec(hostnameOverride=draw(HOSTNAMES), **extra)


# ---- pod-level resources (PodLevelResources, 1.32 alpha, 1.34 beta on) -------------------------------

RESOURCE_NAMES = st.sampled_from(["cpu", "memory", "hugepages-2Mi", "nvidia.com/gpu", "ephemeral-storage", "pods"])
QUANTITIES = st.sampled_from(["1", "500m", "0", "-1", "1Gi", "2", "100Mi"])


@st.composite
def pod_resources(draw: st.DrawFn) -> dict[str, Any]:
    pod: dict[str, Any] = {}
    for part in ("requests", "limits"):
        if draw(st.booleans()):
            pod[part] = draw(st.dictionaries(RESOURCE_NAMES, QUANTITIES, min_size=1, max_size=2))
    spec = pod_spec(resources=pod)
    if draw(st.booleans()):
        spec["containers"][0]["resources"] = {"requests": draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITIES, min_size=1, max_size=2))}
    return spec


# ---- projections (ClusterTrustBundleProjection, PodCertificateRequest) ----------------------------------


SIGNER_NAMES = st.sampled_from(
    [
        "example.com/foo",
        "bad",
        "",
        "kubernetes.io/kube-apiserver-client-pod",
        "a.kubernetes.io/x",
        "example.com/a/b",
        "EXAMPLE.com/x",
        "example/x",
        "example.com/",
        "example.com/ns.name",
        "example.com/UP",
        "-a.com/x",
        "a..com/x",
        "x" * 64 + ".com/s",
        "example.com/" + "y" * 254,
        ("a" * 60 + ".") * 5 + "com/s",
    ]
)
KEY_TYPES = st.sampled_from(["RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519", "", "DSA", "rsa3072"])
PROJECTED_PATHS = st.sampled_from(["creds.pem", "", "/abs", "../x", "..x", "a/../b", "a/b.pem", "key.pem", "chain.pem", "..", "ctb.pem"])
MAX_EXPIRATIONS = st.sampled_from([3599, 3600, 86400, 86401, 7862400, 7862401, 100, 8640000])
ANNOTATION_KEYS = st.sampled_from(
    ["a", "bad key!", "example.com/a", "Example.COM/A", "example.com/", "/a", "a/b/c", "", "example.com/" + "x" * 64, "UP.example.com/x", "-x.com/a"]
)
CTB_NAMES = st.sampled_from(
    ["ctb", "UPPER", "", "example.com:s:ctb", "example.com:s:", "example.com:s:UP", ":x", "a:b", "a/b:c", "example.com:s:x:y", "x" * 254, "a.b"]
)
SELECTORS = st.sampled_from(
    [{"matchLabels": {"a": "b"}}, {"matchLabels": {"bad key!": "x"}}, {"matchExpressions": [{"key": "a", "operator": "In"}]}, {}, {"matchLabels": {"a": "b c"}}]
)


@st.composite
def _pod_certificate(draw: st.DrawFn) -> dict[str, Any]:
    annotations = draw(_maybe(st.dictionaries(ANNOTATION_KEYS, st.sampled_from(["v", ""]), max_size=2)))
    if annotations is not None and draw(st.integers(0, 15)) == 0:
        annotations = {"example.com/big": "x" * 262144}  # ValidateAnnotationsSize: over 256 KiB
    return _drop_none(
        {
            "signerName": draw(SIGNER_NAMES),
            "keyType": draw(KEY_TYPES),
            "credentialBundlePath": draw(_maybe(PROJECTED_PATHS)),
            "keyPath": draw(_maybe(PROJECTED_PATHS)),
            "certificateChainPath": draw(_maybe(PROJECTED_PATHS)),
            "maxExpirationSeconds": draw(_maybe(MAX_EXPIRATIONS)),
            "userAnnotations": annotations,
        }
    )


@st.composite
def _cluster_trust_bundle(draw: st.DrawFn) -> dict[str, Any]:
    return _drop_none(
        {
            "name": draw(_maybe(CTB_NAMES)),
            "signerName": draw(_maybe(SIGNER_NAMES)),
            "labelSelector": draw(_maybe(SELECTORS)),
            "path": draw(PROJECTED_PATHS),
            "optional": draw(_maybe(st.booleans())),
        }
    )


@st.composite
def _token(draw: st.DrawFn) -> dict[str, Any]:
    return _drop_none(
        {
            "path": draw(st.sampled_from(["token", "", "/abs", "../x", "..x", "ctb.pem"])),
            "expirationSeconds": draw(_maybe(st.sampled_from([600, 100, 3600, 2**32]))),
            "audience": draw(_maybe(st.just("a"))),
        }
    )


PROJECTION_KINDS = {"podCertificate": _pod_certificate(), "clusterTrustBundle": _cluster_trust_bundle(), "serviceAccountToken": _token()}


@st.composite
def _projection_source(draw: st.DrawFn) -> dict[str, Any]:
    """One entry of `sources`: mostly one kind, sometimes two (more than 1 volume type per source)."""
    kinds = (
        draw(st.lists(st.sampled_from(sorted(PROJECTION_KINDS)), min_size=1, max_size=2, unique=True))
        if draw(st.integers(0, 7)) == 0
        else [draw(st.sampled_from(sorted(PROJECTION_KINDS)))]
    )
    return {kind: draw(PROJECTION_KINDS[kind]) for kind in kinds}


@st.composite
def projections(draw: st.DrawFn) -> dict[str, Any]:
    """A projected volume of clusterTrustBundle, podCertificate and serviceAccountToken sources;
    a second entry (another source, or a configMap item) tries paths the first one took."""
    sources = [draw(_projection_source())]
    extra = draw(st.integers(0, 3))
    if extra == 1:
        sources.append(draw(_projection_source()))
    elif extra == 2:
        sources.append({"configMap": {"name": "c", "items": [{"key": "k", "path": draw(st.sampled_from(["ctb.pem", "creds.pem", "key.pem", "other"]))}]}})
    mount = {"name": "p", "mountPath": "/p"}
    return pod_spec(main={"volumeMounts": [mount]}, volumes=[{"name": "p", "projected": {"sources": sources}}])


# ---- workload grouping: workloadRef (1.35), schedulingGroup (1.36) ----------------------------------

GROUP_NAMES = st.sampled_from(["pg-1", "UPPER", "", "a.b", "x" * 254, "-x"]) | st.text(st.sampled_from("ab-.Z9"), min_size=0, max_size=8)


@st.composite
def workload_grouping(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        return pod_spec(schedulingGroup=_drop_none({"podGroupName": draw(_maybe(GROUP_NAMES))}))
    ref = _drop_none(
        {"name": draw(_maybe(GROUP_NAMES)), "podGroup": draw(_maybe(GROUP_NAMES)), "podGroupReplicaKey": draw(_maybe(st.sampled_from(["0", "a", "", "UP"])))}
    )
    return pod_spec(workloadRef=ref)


# ---- 1.37 fields, and older gated fields --------------------------------------------------------------


@st.composite
def probes_1_37(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        probe: dict[str, Any] = {"grpc": _drop_none({"port": 8080, "mode": draw(_maybe(st.sampled_from(["Plaintext", "TLS", "", "x"])))})}
    else:
        probe = {"httpGet": _drop_none({"port": 8080, "path": "/", "protocol": draw(_maybe(st.sampled_from(["HTTP1", "HTTP2", "", "x"])))})}
    which = draw(st.sampled_from(["livenessProbe", "readinessProbe", "startupProbe"]))
    return pod_spec(main={which: probe})


@st.composite
def volumes_1_37(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["emptyDir.mode", "secret.defaultUser", "bindMountOptions", "configMap.items.user"]))
    mount: dict[str, Any] = {"name": "v", "mountPath": "/v"}
    number = draw(st.sampled_from([0, 420, 511, 512, -1, 1000]))
    if kind == "emptyDir.mode":
        volume: dict[str, Any] = {"name": "v", "emptyDir": {"mode": number}}
    elif kind == "secret.defaultUser":
        volume = {"name": "v", "secret": {"secretName": "s", "defaultUser": number}}
    elif kind == "configMap.items.user":
        volume = {"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "p", "user": number}]}}
    else:
        volume = {"name": "v", "emptyDir": {}}
        mount["bindMountOptions"] = draw(st.lists(st.sampled_from(["ro", "nosuid", "x", ""]), max_size=2))
    return pod_spec(main={"volumeMounts": [mount]}, volumes=[volume])


@st.composite
def gated_older(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            [
                "sidecar",
                "procMount",
                "appArmor",
                "supplementalGroupsPolicy",
                "hostUsers",
                "resizePolicy",
                "recursiveReadOnly",
                "matchLabelKeys",
                "userNamespaces",
            ]
        )
    )
    if kind == "sidecar":
        init = container(name="side", restartPolicy=draw(st.sampled_from(["Always", "Never", "OnFailure", ""])))
        if draw(st.booleans()):
            init["startupProbe"] = {"exec": {"command": ["true"]}}
        return pod_spec(initContainers=[init])
    if kind == "procMount":
        spec = pod_spec(main={"securityContext": {"procMount": draw(st.sampled_from(["Unmasked", "Default", "x"]))}})
        if draw(st.booleans()):
            spec["hostUsers"] = False
        return spec
    if kind == "appArmor":
        profile = _drop_none(
            {"type": draw(st.sampled_from(["RuntimeDefault", "Localhost", "Unconfined", "x"])), "localhostProfile": draw(_maybe(st.sampled_from(["p", ""])))}
        )
        return pod_spec(securityContext={"appArmorProfile": profile})
    if kind == "supplementalGroupsPolicy":
        return pod_spec(securityContext={"supplementalGroupsPolicy": draw(st.sampled_from(["Merge", "Strict", "", "x"]))})
    if kind in ("hostUsers", "userNamespaces"):
        return pod_spec(hostUsers=draw(st.booleans()), hostNetwork=draw(st.booleans()))
    if kind == "resizePolicy":
        policy = {
            "resourceName": draw(st.sampled_from(["cpu", "memory", "gpu"])),
            "restartPolicy": draw(st.sampled_from(["NotRequired", "RestartContainer", "x"])),
        }
        return pod_spec(main={"resizePolicy": [policy]})
    if kind == "recursiveReadOnly":
        mount = _drop_none(
            {
                "name": "v",
                "mountPath": "/v",
                "readOnly": draw(_maybe(st.booleans())),
                "recursiveReadOnly": draw(st.sampled_from(["Disabled", "IfPossible", "Enabled", "x"])),
            }
        )
        return pod_spec(main={"volumeMounts": [mount]}, volumes=[{"name": "v", "emptyDir": {}}])
    term = {
        "topologyKey": "zone",
        "labelSelector": {"matchLabels": {"app": "x"}},
        "matchLabelKeys": draw(st.sampled_from([["app"], ["pod-template-hash"], ["bad key!"], []])),
    }
    return pod_spec(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})


# topic -> strategy: the oracle draws from each in turn, so every topic gets its share of cases.
TOPICS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "env-names": env_names(),
    "dns": dns(),
    "selinux": selinux(),
    "hooks": hooks(),
    "file-key-refs": file_key_refs(),
    "restart-rules": restart_rules(),
    "restart-all": restart_all(),
    "resize-policy": resize_policies(),
    "image-volumes": image_volumes(),
    "hostname-override": hostname_overrides(),
    "pod-resources": pod_resources(),
    "projections": projections(),
    "workload-grouping": workload_grouping(),
    "probes-1.37": probes_1_37(),
    "volumes-1.37": volumes_1_37(),
    "gated-older": gated_older(),
}
