"""glibc's mmap threshold is fixed before the workers fork (webhook/server/memory.py): large
request buffers are unmapped when freed instead of staying in the threads' heaps."""

from __future__ import annotations

import platform

import pytest

from webhook.server import memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_the_threshold_is_fixed_on_glibc(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert memory.keep_large_blocks_unmapped() is True


def test_an_operators_own_threshold_is_left_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert memory.keep_large_blocks_unmapped() is False
