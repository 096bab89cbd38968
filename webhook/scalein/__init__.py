"""Scale-in ordering: deletion costs that make scale-in free whole NPU nodes and large blocks.

`scoring` is pure (nodes, pods, settings in; costs and patches out); `cluster` keeps the
indexed view both `planning` (offline) and `reconciling` (watch + patch) score from.
"""
