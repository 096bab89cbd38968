"""Kthena's and Volcano's names as the other components see them: the ModelServing API, the labels
Kthena's ModelServing controller sets on the pods it creates, and the keys that attach a pod to
its Volcano PodGroup and task. One home, so the webhook's rules, the scale-in ranking and `check`'s
pod previews cannot disagree (reference: Kthena's ModelServing controller; Volcano's PodGroup).
"""

from __future__ import annotations

MODELSERVING_GROUP = "workload.serving.volcano.sh"
MODELSERVING_VERSION = "v1alpha1"
MODELSERVING_API_VERSION = f"{MODELSERVING_GROUP}/{MODELSERVING_VERSION}"
MODELSERVING_KIND = "ModelServing"
MODELSERVING = (MODELSERVING_GROUP, MODELSERVING_KIND)
# The policy an AutoscalingPolicyBinding names (same group and version as ModelServing).
AUTOSCALINGPOLICY_API_VERSION = MODELSERVING_API_VERSION
AUTOSCALINGPOLICY_KIND = "AutoscalingPolicy"

# Pod labels the ModelServing controller owns.
LABEL_PREFIX = "modelserving.volcano.sh/"
LABEL_NAME = LABEL_PREFIX + "name"
LABEL_GROUP = LABEL_PREFIX + "group-name"
LABEL_ROLE = LABEL_PREFIX + "role"
LABEL_ROLE_ID = LABEL_PREFIX + "role-id"
LABEL_ENTRY = LABEL_PREFIX + "entry"
LABEL_REVISION = LABEL_PREFIX + "revision"
LABEL_ROLE_TEMPLATE_HASH = LABEL_PREFIX + "role-template-hash"

# Environment variables the controller puts in every container and init container of a pod,
# replacing any of the template's with the same name (createCommonEnvVars / addEnvVars).
ENV_GROUP_SIZE = "GROUP_SIZE"  # workerReplicas + 1
ENV_ENTRY_ADDRESS = "ENTRY_ADDRESS"  # <entry pod name>.<namespace>
ENV_WORKER_INDEX = "WORKER_INDEX"  # 0 for the entry pod, 1..workerReplicas for the workers

# Volcano: the pod's PodGroup and its task (subgroup) within it.
ANNOTATION_GROUP = "scheduling.k8s.io/group-name"
ANNOTATION_TASK = "volcano.sh/task-spec"

# The only scheduler name Kthena makes PodGroups (and PodGroup annotations, and reads the queue
# annotation) for, compared literally; also the CRD's default for spec.schedulerName (kthena
# `pkg/model-serving-controller/podgroupmanager/manager.go`, shouldCreatePodGroup).
KTHENA_GANG_SCHEDULER = "volcano"
