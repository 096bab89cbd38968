"""Deployment helpers: the webhook configurations generated from the rule registry
(`generating`). The self-managed serving certificate lives with the other certificate code, in
webhook/certs/keeper.py."""
