"""Coverage counting for atheris-instrumented code at a fraction of atheris's cost.

atheris instruments every basic block with a call ``atheris._trace_branch(counter)``. That
function is a pybind11 binding: about 150 ns a call on this project's machines, against
about 20 ns for a plain built-in method. With some 3,000 blocks per fuzz input it was 35-40 %
of the fuzzer's time.

:class:`BranchCounters` swaps the module attribute the instrumented code looks up for the
``append`` method of a list, so a block only records its counter number. At the end of each
input, :meth:`BranchCounters.flush` turns the recorded numbers into hit counts in an 8-bit
counter array of its own, which it registers with libFuzzer through the SanitizerCoverage
interface (``__sanitizer_cov_8bit_counters_init`` and ``__sanitizer_cov_pcs_init``), just as
atheris registers its own array. libFuzzer sees the same features as before: one counter a
block, its hit count put in libFuzzer's buckets. One difference, on purpose: a count
saturates at 255, where atheris's wraps around (a block run 256 times looked unrun).

The counter numbers are atheris's, reserved as modules are instrumented; the array grows
its registered part as higher numbers turn up (modules imported late). atheris's own array
stays registered and stays zero.

A WHILE loop running until a long timeout records some ten million hits a second. So that
the list stays small whatever the input does, a daemon thread flushes it whenever it has
grown past BACKGROUND_FLUSH_AT (libFuzzer reads the counters only after the input, and
adding to them early changes nothing).

Where a C compiler is at hand, the counting is cheaper still: fuzz/native_counter.py
builds a C function that increments the counter itself at each call, saturating, so that
nothing is recorded and nothing is left to convert; :meth:`BranchCounters.flush` then only
registers counters hit beyond the registered part. list.append remains the fallback.

Only the fuzzing process installs this (fuzz/driver_fuzz.py); pytest replay never traces.
"""
from __future__ import annotations

import ctypes
import os
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Optional

import numpy as np

#: Counter numbers beyond this share counters (modulo), as they do in atheris (whose default
#: is the same size).
CAPACITY = 1 << 20
#: libFuzzer's counters are 8 bits wide.
MAX_COUNT = 255
#: Pending hits past which the background thread flushes during an input (8 bytes each).
BACKGROUND_FLUSH_AT = 1 << 18
#: How often the background thread looks at the pending hits.
BACKGROUND_POLL_S = 0.02
#: The SanitizerCoverage registration functions; libFuzzer defines them.
COUNTERS_INIT = "__sanitizer_cov_8bit_counters_init"
PCS_INIT = "__sanitizer_cov_pcs_init"


def find_sanitizer_library() -> Optional[ctypes.CDLL]:
    """The loaded library that defines libFuzzer's registration functions: the process
    itself (a Python linked or preloaded with libFuzzer), else the libFuzzer core atheris
    loaded (present from the first input on). None when neither does."""
    candidates: list[Optional[str]] = [None]
    try:
        with open("/proc/self/maps") as maps:
            mapped = {line.split()[-1] for line in maps if line.rstrip().endswith(".so")}
        candidates += sorted(path for path in mapped if "libfuzzer" in Path(path).name.lower())
    except OSError:
        pass
    for path in candidates:
        try:
            # RTLD_NOLOAD: only a library already in the process (never load a second
            # libFuzzer, whose counters nobody would read).
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY) if path else ctypes.CDLL(None)
            getattr(library, COUNTERS_INIT)
            getattr(library, PCS_INIT)
            return library
        except (OSError, AttributeError):
            continue
    return None


class BranchCounters:
    """Block hits recorded by ``list.append``, turned into libFuzzer's 8-bit counters once
    per input, or counted directly by the compiled ``native`` counter module (see the
    module docstring)."""

    THREAD_NAME = "branch-counters"

    def __init__(self, library: ctypes.CDLL, capacity: int = CAPACITY,
                 native: Optional[ModuleType] = None) -> None:
        self.native = native
        self.hits: list[int] = []
        self.capacity = capacity
        self.counters = np.zeros(capacity, np.uint8)
        # One (pc, flags) pair a counter. libFuzzer tells covered blocks apart by the
        # entry's address, so zeros serve (atheris leaves its table zero as well).
        self.pc_table = np.zeros(2 * capacity, np.uintp)
        self.registered = 0
        # One flush at a time: the end of an input and the background thread may overlap.
        self._flushing = threading.Lock()
        self._counters_init = getattr(library, COUNTERS_INIT)
        self._pcs_init = getattr(library, PCS_INIT)
        for register in (self._counters_init, self._pcs_init):
            register.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            register.restype = None

    def install(self, atheris_module) -> None:
        """Route the instrumented blocks' calls here. They look the function up on the
        atheris module at every call, so this holds for code instrumented before and after."""
        if self.native is not None:
            # The array lives as long as self; unbind() before dropping it.
            self.native.bind(self.counters.ctypes.data, self.capacity)
            atheris_module._trace_branch = self.native.hit
        else:
            atheris_module._trace_branch = self.hits.append

    def unbind(self) -> None:
        """Stop the compiled counter from writing into this object's array."""
        if self.native is not None:
            self.native.unbind()

    def start_background_flush(self) -> Optional[threading.Thread]:
        """Keep the pending hits bounded during long inputs (see the module docstring);
        nothing to do (None) when the compiled counter counts in place."""
        if self.native is not None:
            return None
        thread = threading.Thread(target=self._flush_when_large, name=self.THREAD_NAME,
                                  daemon=True)
        thread.start()
        return thread

    def _flush_when_large(self) -> None:
        while True:
            time.sleep(BACKGROUND_POLL_S)
            if len(self.hits) >= BACKGROUND_FLUSH_AT:
                self.flush()

    def flush(self) -> None:
        """Add the hits recorded since the last flush to the counters libFuzzer reads (with
        the compiled counter: register the counters hit beyond the registered part)."""
        if self.native is not None:
            highest = self.native.highest()
            if highest >= self.registered:
                self._register(highest + 1)
            return
        with self._flushing:
            self._flush()

    def _flush(self) -> None:
        hits = self.hits
        n = len(hits)
        if not n:
            return
        # Threads of the driver may append meanwhile: take the first n, keep the rest.
        blocks = np.fromiter(hits[:n], np.intp, n)
        del hits[:n]
        highest = int(blocks.max())
        if highest >= self.capacity:
            blocks %= self.capacity
            highest = int(blocks.max())
        if highest >= self.registered:
            self._register(highest + 1)
        counts = np.bincount(blocks)
        # Dense over the counters up to the highest hit (a few thousand): cheaper than
        # picking out the hit ones. Each count is cut to the room its counter has left.
        window = self.counters[:len(counts)]
        np.minimum(counts, MAX_COUNT - window, out=counts)
        window += counts.astype(np.uint8)

    def _register(self, stop: int) -> None:
        """Hand libFuzzer the counters [registered, stop), plus headroom: every number
        reserved so far (later ones come from modules imported later still)."""
        import atheris
        stop = min(self.capacity, max(stop, atheris._reserve_counter() + 1))
        start = self.registered
        counters = self.counters.ctypes.data
        pcs = self.pc_table.ctypes.data
        entry = self.pc_table.itemsize * 2
        self._counters_init(counters + start, counters + stop)
        self._pcs_init(pcs + start * entry, pcs + stop * entry)
        self.registered = stop
