"""Flat worker memory under any input: large blocks unmapped when freed, free heap pages
trimmed every few seconds, and the master's heap frozen before the fork.

glibc serves a large block with its own mmap and unmaps it on free, but after it frees such a
block it raises that threshold to the block's size and keeps larger trim margins, so the next
large bodies come from the heaps of the worker's threads and stay there, fragmented, after the
request: a fuzz run with bodies near the body limit grew each worker steadily that way
(MALLOC_ARENA_MAX=2 only slowed it), and with the threshold fixed at glibc's own starting value
the same run stays flat (benchmarks/fuzz.py --mode mixed; figures in benchmarks/HISTORY.md).

Setting the threshold explicitly is what turns the adjustment off (mallopt(3)). The setting lives
in the C library's process state, so setting it once in gunicorn's master before the fork covers
every worker. Not glibc (musl, macOS): nothing to do, nothing done.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("servinggate.server")

M_MMAP_THRESHOLD = -3  # <malloc.h>
MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, kept from now on


def _glibc(name: str, argtypes: list[Any]) -> Any:
    """A glibc function returning int, or None where the C library has no such function."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function


def keep_large_blocks_unmapped() -> bool:
    """Fix glibc's mmap threshold unless the environment already chose one; True when set."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return False  # the operator's choice, applied by glibc at start
    mallopt = _glibc("mallopt", [ctypes.c_int, ctypes.c_int])
    if mallopt is None:
        return False
    done = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    if not done:
        log.warning("could not fix malloc's mmap threshold; worker memory may grow after very large requests")
    return done


def freeze_startup_heap() -> int:
    """Move every object alive now out of the cyclic collector's reach; how many were moved.

    Called in gunicorn's master just before each fork. A worker's full collection would otherwise
    walk everything the master imported and built (the client library, schemas, the registry),
    holding the GIL for tens of milliseconds, so every review in flight on that worker waited that
    long (the end-to-end p99 through an API server showed it). The walk also writes to each
    object's header, which copies the master's pages into every worker one by one: memory that
    looks like growth. Frozen objects are never collected; nothing built at start is garbage.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


TRIM_EVERY = 2.0  # seconds; one trim of a worker's heaps is cheap (benchmarks/HISTORY.md)


def _malloc_trim() -> Callable[[int], int] | None:
    return _glibc("malloc_trim", [ctypes.c_size_t])


def start_heap_trimmer(every: float = TRIM_EVERY, trim: Callable[[int], int] | None = None) -> threading.Thread | None:
    """In a worker: give the free pages inside glibc's heaps back to the kernel every `every` s.

    glibc returns memory only from the top of a heap; pages freed in the middle stay resident.
    Requests of every size, read by the event loop and answered by eight threads, leave such
    holes in each thread's heap, and a worker's RSS crept up with no Python object held (the
    fuzz benchmark's mixed input: +13-14% over 60,000 requests, tracemalloc flat). `malloc_trim`
    hands those pages back (madvise), which took the same run to +6-9%. It runs in its own
    daemon thread: the call releases the GIL and takes each heap's lock briefly. None when the C
    library has no malloc_trim (musl, macOS)."""
    trim = trim or _malloc_trim()
    if trim is None:
        return None

    def run() -> None:
        while True:
            time.sleep(every)
            trim(0)

    thread = threading.Thread(target=run, name="heap-trimmer", daemon=True)
    thread.start()
    return thread
