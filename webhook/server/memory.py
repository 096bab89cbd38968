"""Flat worker memory under any input: glibc's malloc is told to give large blocks back.

glibc serves a block of 128 KiB or more with its own mmap and unmaps it on free, but after it
frees such a block it raises that threshold to the block's size (up to 32 MiB) and keeps larger
trim margins, so the next bodies of a few MiB come from the heaps of the worker's threads and stay
there, fragmented, after the request. A fuzz run with bodies near the 7 MiB limit grew each
worker from ~150 to ~270 MiB that way (MALLOC_ARENA_MAX=2 only slowed it); with the threshold
fixed at glibc's own starting value, 128 KiB, the same run stays at 55-80 MiB per worker
(benchmarks/fuzz.py --mode mixed; figures in docs/design-notes.md).

Setting the threshold explicitly is what turns the adjustment off (mallopt(3)). The setting lives
in the C library's process state, so setting it once in gunicorn's master before the fork covers
every worker. Not glibc (musl, macOS): nothing to do, nothing done.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger("servinggate.server")

M_MMAP_THRESHOLD = -3  # <malloc.h>
MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, kept from now on


def keep_large_blocks_unmapped() -> bool:
    """Fix glibc's mmap threshold unless the environment already chose one; True when set."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return False  # the operator's choice, applied by glibc at start
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    done = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    if not done:
        log.warning("could not fix malloc's mmap threshold; worker memory may grow after very large requests")
    return done
