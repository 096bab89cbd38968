"""Deployment manifests derived from the rule registry: the webhook configurations
(`configurations`), the opt-in kustomize components (`components`, with the CEL fallback of
`fallback`), the YAML they are written in (`yamlfile`) and the command that writes them all
(`generating`). The self-managed serving certificate lives with the other certificate code, in
webhook/certs/keeper.py."""
