"""`python -m webhook version` (and `--version`): the product version and the CRDs `check` ships."""

from __future__ import annotations

from . import __version__, crds


def lines() -> list[str]:
    out = [f"servinggate {__version__}", "bundled CRDs (python -m webhook crds refresh DIR to update):"]
    for e in crds.versions():
        out.append(f"  {e['name']} {','.join(e['versions'])}: {e['upstream']} ({e['source']}, sha256 {e['sha256'][:12]})")
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python -m webhook version\n\nPrint the product version and the versions of the bundled CRDs.")
        return 0
    print("\n".join(lines()))
    return 0
