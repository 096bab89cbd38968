"""`python -m webhook certs`: a development CA and serving certificate in a folder.

For a cluster, prefer `serve --cert-management self` (certs/keeper.py) or cert-manager; this is for
running the webhook on a workstation and pointing a test API server or curl at it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .files import ensure_dev_certs


def main(argv: list[str]) -> int:
    """Write ca.* and tls.* unless a serving pair is already there (`--force` replaces it)."""
    parser = argparse.ArgumentParser(prog="python -m webhook certs", description="generate a development CA and serving certificate")
    parser.add_argument("--certs-dir", default="certs")
    parser.add_argument("--service-name", default="servinggate-webhook")
    parser.add_argument("--service-namespace", default="servinggate-system")
    parser.add_argument("--force", action="store_true", help="replace existing files")
    args = parser.parse_args(argv)
    written = ensure_dev_certs(Path(args.certs_dir), args.service_name, args.service_namespace, force=args.force)
    print(("wrote" if written else "kept existing") + f" certificates in {args.certs_dir}")
    return 0
