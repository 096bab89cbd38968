"""`python -m webhook plan`: which pods a scale-in would remove, read from a snapshot or a live
cluster, and what that frees. Read-only: it scores with the shared core (webhook/scalein/), then
orders each workload's pods as its controller does (`ranking`) and prints them (`rendering`);
`planning` is the command. It never imports the reconciler (webhook/scalein/reconcile/).
"""
