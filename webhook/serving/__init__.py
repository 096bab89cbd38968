"""What `serve` needs besides HTTP: its start, limits and metrics, the answer type, the review
pipeline from bytes to an answer, the probes, the lookups its rules read through, and the worker's
memory settings. HTTP (the worker, the Flask application, gunicorn) is webhook/server's; this
layer knows nothing of it."""
