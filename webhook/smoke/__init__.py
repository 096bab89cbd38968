"""`python -m webhook smoke`: after an install, proves that the webhooks answer in the cluster.

Three server-side dry-run creates (nothing is stored) in a namespace the webhooks judge: a
known-good ModelServing (must be accepted), a known-bad one (a `*.servinggate.io` webhook must
refuse it with our message) and a ModelServing pod (our mutating webhook's patch must show in the
object the API server returns). The objects are in `objects`, the reading of the API server's
answers in `verdicts` (both pure), the calls in `dryrun`, the command in `cli`.
"""
