"""Scale-in ordering: deletion costs that make scale-in free whole NPU nodes and large blocks.

The pure core: `accounting` counts what pods and nodes hold of accelerators, `controllers` says
which owners are scored, `costs` turns the counts into costs, `goints` reads and sums costs as the
controllers' Go code does, `decisions` says whether a cost is ours to write; `cluster` keeps the
indexed view that both commands score from:

- `plan` (offline, planning.py): `ranking` orders each workload's pods as its controller
  would, `rendering` prints the result as text, JSON or SVG;
- `reconcile` (reconciling.py, the command, which wires the pieces to the API client):
  `watching` (one `kube.reflector` per kind) feeds the `worker` typed `events`; the worker queues the costs to write in
  `writequeue`; the `writing` threads send them through `patching` (shared with `--clear`),
  paced by `pacing`, and answer on the worker's queue; `kube.leases` elects one writer, `health`
  serves /healthz and /metrics.
"""
