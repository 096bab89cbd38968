"""Decoded JSON read without trusting its shape, and typed views of the kinds ServingGate reads.

An object that reaches a rule or the reconciler was decoded from JSON the API server, a client
or a file sent: a field the schema makes a map may be a string, a list may be null. Everything
here answers such a field with an empty value or None, never with an exception, so that the
rules report a malformed field as a field error at its path (their own check), and the
reconciler skips it. This is the lowest layer of the package: every other may import it.

- `values`: the one "a dict or an empty one" helper and its kin (`as_dict`, `as_list`,
  `objects`, `metadata`, ...);
- `kthena`: a ModelServing as its rules read it, and the targets of an AutoscalingPolicy or
  AutoscalingPolicyBinding;
- `volcano`: a HyperNode and its members, a Queue, and the network topology policy of a PodGroup.
"""

from __future__ import annotations

from .values import as_dict, as_list, as_object, labels_of, metadata, namespace_of, objects, only_objects

__all__ = ["as_dict", "as_list", "as_object", "labels_of", "metadata", "namespace_of", "objects", "only_objects"]
