"""Scale-in ordering: deletion costs that make scale-in free whole NPU nodes and large blocks.

`scoring` is pure (nodes, pods, settings in; costs and write decisions out); `cluster` keeps the
indexed view that both commands score from:

- `plan` (offline, planning.py): `ranking` orders each workload's pods as its controller
  would, `rendering` prints the result as text, JSON or SVG;
- `reconcile` (reconciling.py, the command, which wires the pieces to the API client):
  `watching` (one `kube.reflector` per kind) feeds the `worker` typed `events`; the worker queues the costs to write in
  `writequeue`; the `writing` threads send them through `patching` (shared with `--clear`),
  paced by `pacing`, and answer on the worker's queue; `kube.leases` elects one writer, `health`
  serves /healthz and /metrics.
"""
