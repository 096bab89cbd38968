"""Deployment helpers: the webhook configurations generated from the rule registry
(`generating`) and the self-managed serving certificate kept in a Secret (`selfcerts`)."""
