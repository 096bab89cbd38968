"""The settings of the commands whose config file another command reads: `serve`'s (its file is
the webhook's ConfigMap, which `check`, `audit` and `smoke` read too). A layer of its own, below
every command and above the packages its groups come from, so that no command imports another.
Declarations only; the `setting()` machinery is webhook/config.py's."""
