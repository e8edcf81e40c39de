"""Giving freed memory back to the operating system.

The concept graph is built on worker threads (:func:`g2cons_plugins.graph.build_edges`). glibc gives each thread
its own malloc arena and keeps what a thread freed there for later use, so after a threaded pass the resident
memory stays up to ~40% above what the result holds (measured at 80k passages: derive kept 686 MB instead of
479 MB single-threaded; 424 MB after :func:`release_free_memory`). ``malloc_trim(0)`` returns those free pages;
it takes milliseconds. Elsewhere (another C library, another OS) this is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any

__all__ = ["release_free_memory"]


@cache
def _malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # glibc only (musl has none)
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Return the free pages of every malloc arena to the OS (glibc); True when it could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
