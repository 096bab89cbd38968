"""`python -m webhook reconcile`: the reconciler's I/O and threads around the shared core
(webhook/scalein/): watching the API server, the worker that owns the cache, the write queue and
writer threads, the guarded patches and their pacing, backing off from another writer, the
Lease, health and metrics. `reconciling` is the command and says which module does what. It
never imports `plan` (webhook/scalein/plan/).
"""
