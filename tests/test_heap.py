"""The C heap's threshold: large blocks (a model run's tensors) are mapped, and unmapped when freed."""

from __future__ import annotations

import platform

import pytest

from toolsearch.runtime.heap import map_large_blocks


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_keeps_its_threshold_fixed() -> None:
    assert map_large_blocks()
