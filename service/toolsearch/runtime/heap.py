"""How the C heap gives memory back: large blocks are mapped on their own, and unmapped when freed.

A catalog's embedding allocates tensors of a few hundred kilobytes to a few megabytes per model run
(attention scores, feed-forward activations), from onnxruntime's worker threads. glibc maps a block
above its threshold (128 KiB) on its own, but raises the threshold to the size of each such block
freed, up to 32 MiB; from then on these tensors come from the threads' heaps, which keep their
high-water mark (docs/benchmarks.md, "Issue 43: memory by budget"). Fixing the threshold at its
initial value keeps the tensors mapped, so the memory a catalog's embedding used is the system's
again when it ends (onnxruntime's arena gives them back after each passage run:
`embedding.embedder`). Allocations below it (Python's objects, a search's arrays for a few
thousand tools) are unaffected.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

logger = logging.getLogger(__name__)

MMAP_THRESHOLD = 128 * 1024
"""glibc's initial threshold, kept: blocks at least this large are mapped on their own."""
_M_MMAP_THRESHOLD = -3
"""mallopt's parameter number (malloc.h); setting it also turns the dynamic threshold off."""


def map_large_blocks() -> bool:
    """Fix the C heap's mmap threshold at `MMAP_THRESHOLD` (glibc only; elsewhere nothing is done).
    True when it was set."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):  # a C library without mallopt (musl, macOS)
        mallopt = None
    if mallopt is None:
        logger.debug("the C library has no mallopt: its heap keeps its own threshold")
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
