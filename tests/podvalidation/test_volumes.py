"""Volumes, their sources, and the mounts that refer to them."""

from support.pods import container_pod, errors_of, pod_with

from webhook.podvalidation import apply_pod_defaults


def test_a_volume_without_a_source_becomes_an_empty_dir():
    pod = apply_pod_defaults(pod_with(volumes=[{"name": "data"}]))
    assert pod["spec"]["volumes"][0]["emptyDir"] == {}


def test_one_source_only_reported_against_the_later_source():
    errs = errors_of(pod_with(volumes=[{"name": "a", "emptyDir": {}, "configMap": {"name": "c"}}]))
    assert errs == ["spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type"]


def test_each_common_source_requires_its_name():
    errs = errors_of(
        pod_with(
            volumes=[
                {"name": "a", "configMap": {}},
                {"name": "b", "secret": {}},
                {"name": "c", "persistentVolumeClaim": {}},
                {"name": "d", "hostPath": {}},
                {"name": "e", "nfs": {"path": "rel"}},
            ]
        )
    )
    assert errs == [
        "spec.volumes[0].configMap.name: Required value",
        "spec.volumes[1].secret.secretName: Required value",
        "spec.volumes[2].persistentVolumeClaim.claimName: Required value",
        "spec.volumes[3].hostPath.path: Required value",
        "spec.volumes[4].nfs.server: Required value",
        'spec.volumes[4].nfs.path: Invalid value: "rel": must be an absolute path',
    ]


def test_volume_names_are_labels_and_unique():
    errs = errors_of(pod_with(volumes=[{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}, {"name": "B_"}]))
    assert errs[0] == 'spec.volumes[1].name: Duplicate value: "a"'
    assert errs[1].startswith('spec.volumes[2].name: Invalid value: "B_": a lowercase RFC 1123 label')


def test_mounts_name_a_known_volume_at_a_unique_path():
    pod = container_pod(
        volumeMounts=[{"name": "data", "mountPath": "/d"}, {"name": "nope", "mountPath": "/d"}, {"name": "data", "mountPath": "/e", "subPath": "/abs"}]
    )
    pod["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    assert errors_of(pod) == [
        'spec.containers[0].volumeMounts[1].name: Not found: "nope"',
        'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d": must be unique',
        'spec.containers[0].volumeMounts.subPath: Invalid value: "/abs": must be a relative path',
    ]


def test_items_modes_and_projected_paths():
    errs = errors_of(
        pod_with(
            volumes=[
                {"name": "a", "configMap": {"name": "c", "defaultMode": 1000, "items": [{"key": "k", "path": "../x"}]}},
                {"name": "b", "downwardAPI": {"items": [{"path": "n"}]}},
            ]
        )
    )
    assert errs == [
        "spec.volumes[0].configMap.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive",
        "spec.volumes[0].configMap.items[0].path: Invalid value: \"../x\": must not contain '..'",
        "spec.volumes[1].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
    ]
