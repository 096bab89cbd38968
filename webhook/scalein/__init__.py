"""Scale-in ordering: deletion costs that make scale-in free whole NPU nodes and large blocks.

Two commands share a pure core, kept in this package; each command is a subpackage, and neither
imports the other (an import-linter contract in pyproject.toml):

- the core: `accounting` counts what pods and nodes hold of accelerators, `controllers` says
  which owners are scored, `costs` turns the counts into costs, `goints` reads and sums costs as
  the controllers' Go code does, `decisions` says whether a cost is ours to write, `binpack`
  reads Kthena's ServingGroup and Role states; `cluster` keeps the indexed view that both
  commands score from, `topology` the HyperNodes, `settings` both commands' settings;
- `plan/` (offline): `planning` is the command, `ranking` orders each workload's pods as its
  controller would, `rendering` prints the result as text, JSON or SVG;
- `reconcile/` (`reconciling`, the command, wires the pieces to the API client): `watching`
  (one `kube.reflector` per kind) feeds the `worker` typed `events`; the worker queues the costs
  to write in `writequeue`; the `writing` threads send them through `patching` (which builds the
  guarded JSON Patches and is shared with `--clear`), paced by `pacing`, and answer on the
  worker's queue; `contest` and `notices` back off from another writer; `kube.leases` elects one
  writer, `health` serves /healthz and /metrics.
"""
