"""Binding a fuzzing process to one CPU of its own, as AFL binds each instance to a free core.

A fuzz input crosses threads: an asynchronous execution runs on a driver worker, fenced
executions wait on fences signalled by the harness's scheduler thread, and each crossing
wakes a thread and hands the interpreter lock over. When the threads of one process sit
on different CPUs every such wake-up is a cross-CPU one, which on virtual machines costs
tens of microseconds (an inter-processor interrupt through the hypervisor): measured here,
a submit-and-wait round trip took about 65 us spread over two CPUs and about 20 us on one.
The harness's threads never need to run in parallel (they take turns under the
interpreter lock), so one CPU loses nothing, and several fuzzing processes (libFuzzer's
-jobs, or separate runs) each get a CPU of their own instead of trading places.

"Free" is decided with one lock file per CPU: a process holds the lock of the CPU it
bound to until it exits (the kernel releases it then, even after a crash). A process that
finds every allowed CPU taken runs unbound, as before.

A process that only supervises others (libFuzzer's -fork and -jobs parents) must not
bind: children inherit the CPU mask, and would all end up on the parent's CPU.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Optional

#: Set (to anything) to keep fuzzing processes unbound; inherited by libFuzzer's children.
NO_BINDING_ENV = "NNHAL_FUZZ_NO_CPU_BINDING"
#: Where the per-CPU lock files live (default: a folder of this user's in the temp dir).
LOCK_DIR_ENV = "NNHAL_FUZZ_CPU_LOCK_DIR"


@dataclass
class CpuBinding:
    cpu: int
    lock_path: Path
    lock_file: IO[bytes]       # held open: closing it frees the CPU for another process


def default_lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV)
                or Path(tempfile.gettempdir()) / f"nnhal-fuzz-cpus-{os.getuid()}")


def _try_lock(path: Path) -> Optional[IO[bytes]]:
    # Python opens files non-inheritable: children do not keep the lock alive.
    handle = open(path, "ab")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def bind_to_free_cpu(lock_dir: Optional[Path] = None) -> Optional[CpuBinding]:
    """Bind the calling thread (and every thread it starts later) to the first allowed CPU
    no other fuzzing process holds; None when there is no choice to make (a single allowed
    CPU) or every allowed CPU is taken. Call it before any other thread starts."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    lock_dir = lock_dir or default_lock_dir()
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    for cpu in allowed:
        path = lock_dir / f"cpu{cpu}.lock"
        try:
            handle = _try_lock(path)
        except OSError:
            continue
        if handle is None:
            continue
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            handle.close()
            continue
        return CpuBinding(cpu, path, handle)
    return None


def supervises_others(libfuzzer_argv: list[str]) -> bool:
    """Whether libFuzzer, given these arguments, only starts and watches child processes
    (-fork=N or -jobs=N with N > 0); its children run without those flags."""
    for argument in libfuzzer_argv[1:]:
        for flag in ("-fork=", "-jobs="):
            if argument.startswith(flag):
                try:
                    if int(argument[len(flag):]) > 0:
                        return True
                except ValueError:
                    pass        # libFuzzer reads a malformed number as 0 as well
    return False
