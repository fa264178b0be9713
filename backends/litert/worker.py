"""The process LiteRT runs in, and the parent's side of talking to it.

LiteRT cannot be interrupted from Python, and a native fault in it would end the process
it runs in. So the interpreter runs in a worker process of its own (this file, run as a
script: it imports nothing of the project), fed over its stdin/stdout pipes; the parent
waits for an answer no longer than the execution may take, and kills the worker (then
starts another) when a loop outlives its timeout or the deadline passes. A worker that
dies on its own is reported as such (WorkerDied), with its exit signal and the tail of
its stderr. A worker dies with the process that started it (on Linux): the kernel kills
it when its parent ends, killed or crashed, instead of leaving it to run an endless loop.

Frames are an 8-byte little-endian length and a pickle. The parent sends
``(digest, model_bytes, None, 0)`` to load a model (once per worker: it keeps the
interpreters of the models it saw last) and ``(digest, None, inputs, budget_bytes)`` to run
it; the
worker answers ``("ok", outputs)``, ``("error", stage, message)`` or ``("unknown-model",)``.
A diagnostic run, ``(None, model_bytes, inputs, budget_bytes, tensors)``, is answered with
``("ok", {tensor: value})``.
"""
from __future__ import annotations

import ctypes
import functools
import os
import pickle
import queue
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import OrderedDict

import numpy as np

_LENGTH = struct.Struct("<Q")
#: How long a worker may take to start.
STARTUP_LIMIT_NS = 60_000_000_000
#: Interpreters a worker keeps (the models it ran last).
KEPT_INTERPRETERS = 16
#: The longest single wait: a far time limit (a deadline at the end of the clock, say) is
#: waited for in pieces, since select() and locks refuse timeouts past time_t.
LONGEST_WAIT_S = 3600.0
#: prctl's option that has the kernel send a signal to a process when its parent ends.
PR_SET_PDEATHSIG = 1


def seconds_until(limit_ns: int | None) -> float | None:
    """How long to wait for a monotonic-ns time limit (None: no limit), at most
    LONGEST_WAIT_S at once: 0 once it has passed."""
    if limit_ns is None:
        return None
    return min(LONGEST_WAIT_S, max(0.0, (limit_ns - time.monotonic_ns()) / 1e9))


def encode_frame(message: object) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(payload)) + payload


def _read_exactly(stream, size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


# --- the worker ------------------------------------------------------------------------

#: LiteRT's kernel sets under test, by the name of their driver factory
#: (backends/litert/__init__.py): OpResolverType names. Not BUILTIN: LiteRT applies the
#: XNNPACK delegate under it too, which makes it AUTO again.
KERNEL_SETS = {"auto": "AUTO", "builtin": "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "builtin_ref": "BUILTIN_REF"}


def serve(resolver: str, parent: int) -> None:
    """Answer run requests on stdin until it closes; ``parent`` is the pid of the process
    that started the worker."""
    if not _dies_with(parent):
        return
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    interpreter_of = functools.partial(Interpreter, num_threads=1,
                                       experimental_op_resolver_type=OpResolverType[resolver])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(encode_frame(("ready",)))
    stdout.flush()
    interpreters: OrderedDict = OrderedDict()
    while True:
        header = _read_exactly(stdin, _LENGTH.size)
        if header is None:
            return
        payload = _read_exactly(stdin, _LENGTH.unpack(header)[0])
        if payload is None:
            return
        digest, content, inputs, budget_bytes, *kept = pickle.loads(payload)
        try:
            if kept:
                answer = ("ok", _kept_tensors(interpreter_of, content, inputs, budget_bytes,
                                              kept[0]))
            elif digest not in interpreters and content is None:
                answer = ("unknown-model",)
            else:
                if digest not in interpreters:
                    interpreters[digest] = _Loaded(interpreter_of(model_content=content))
                    while len(interpreters) > KEPT_INTERPRETERS:
                        interpreters.popitem(last=False)
                interpreters.move_to_end(digest)
                loaded = interpreters[digest]
                answer = ("ok", [] if inputs is None else _invoke(loaded, inputs, budget_bytes))
        except Exception as error:      # every LiteRT failure is an answer, not an exit
            answer = ("error", getattr(error, "stage", "load"), f"{type(error).__name__}: {error}")
            # An interpreter that failed is not run again: its state after a failure is
            # LiteRT's own (XNNPACK fails a first invoke it then passes), and each
            # execution of a model must meet the same interpreter.
            interpreters.pop(digest, None)
        stdout.write(encode_frame(answer))
        stdout.flush()


def _dies_with(parent: int) -> bool:
    """Have the kernel kill this process when its parent ends (on Linux): a loop LiteRT
    runs endlessly would outlive it otherwise, the parent alone ever killing a worker.
    False when the parent ended before the request took effect (the worker was then
    handed to another parent, and nothing will kill it)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    return os.getppid() == parent


def _kept_tensors(interpreter_of, content: bytes, inputs: list, budget_bytes: int,
                  tensors: list[int]) -> dict[int, np.ndarray]:
    """A diagnostic run: the values of ``tensors`` (indexes in subgraph 0) after a run of
    the model on an interpreter of its own that keeps every tensor (with a delegate, each
    node becomes a partition of its own, its kernels unchanged)."""
    with warnings.catch_warnings():     # the warning that keeping every tensor is for debugging
        warnings.simplefilter("ignore")
        interpreter = interpreter_of(model_content=content, experimental_preserve_all_tensors=True)
    _invoke(_Loaded(interpreter), inputs, budget_bytes)
    return {tensor: interpreter.get_tensor(tensor).copy() for tensor in tensors}


def _check_budget(interpreter, budget_bytes: int) -> None:
    held = sum(int(np.prod(detail["shape"])) * np.dtype(detail["dtype"]).itemsize
               for detail in interpreter.get_output_details())
    if held > budget_bytes:
        raise MemoryError(f"the outputs take {held} bytes, over the budget of {budget_bytes}")


class _Loaded:
    """An interpreter, and whether its tensors are allocated for the current input shapes.
    Allocating again after a run would lose what LiteRT computed once and kept (a
    DEQUANTIZE of a constant is evaluated on the first run only)."""

    def __init__(self, interpreter) -> None:
        self.interpreter = interpreter
        self.allocated = False


class _StageError(Exception):
    def __init__(self, stage: str, error: Exception) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.stage = stage


def _invoke(loaded: _Loaded, inputs: list, budget_bytes: int) -> list:
    """The outputs of one run; a run whose outputs take more than ``budget_bytes`` fails
    (stage "budget") before they are copied out."""
    interpreter = loaded.interpreter
    stage = "resize"
    try:
        details = interpreter.get_input_details()
        for detail, value in zip(details, inputs):
            if tuple(detail["shape"]) != value.shape:
                interpreter.resize_tensor_input(detail["index"], list(value.shape), strict=False)
                loaded.allocated = False
        stage = "allocate"
        if not loaded.allocated:
            interpreter.allocate_tensors()
            loaded.allocated = True
        stage = "budget"        # what the shapes LiteRT knows before running already take
        _check_budget(interpreter, budget_bytes)
        stage = "set"
        for detail, value in zip(details, inputs):
            interpreter.set_tensor(detail["index"], value)
        stage = "invoke"
        interpreter.invoke()
        stage = "budget"
        _check_budget(interpreter, budget_bytes)
        stage = "get"
        return [interpreter.get_tensor(detail["index"]).copy()
                for detail in interpreter.get_output_details()]
    except Exception as error:
        raise _StageError(stage, error) from error


# --- the parent's side --------------------------------------------------------------------

class WorkerTimeout(Exception):
    """No answer before the time limit: the worker was killed."""


class WorkerDied(Exception):
    """The worker ended without answering (a native crash of LiteRT)."""


class _Launcher:
    """Starts worker processes on one daemon thread that lives as long as this process.
    The kernel takes for a process's parent the thread that started it, not its process,
    and kills a worker when that thread ends (serve): executions and spares start workers
    on threads that end long before them."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)     # a forked child has no such thread

    def _reset(self) -> None:
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = False

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        """subprocess.Popen(*args, **kwargs), run on the launching thread."""
        with self._lock:
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name="litert-worker-launch", daemon=True).start()
        answer: queue.SimpleQueue = queue.SimpleQueue()
        self._requests.put((args, kwargs, answer))
        process = answer.get()
        if isinstance(process, BaseException):
            raise process
        return process

    def _run(self) -> None:
        while True:
            args, kwargs, answer = self._requests.get()
            try:
                answer.put(subprocess.Popen(*args, **kwargs))
            except BaseException as error:     # noqa: B036 - raised in the caller's thread
                answer.put(error)
            del args, kwargs, answer        # nothing of a request stays alive in between


_LAUNCHER = _Launcher()


class Worker:
    """One worker process and the models it holds."""

    def __init__(self, resolver: str) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.process = _LAUNCHER.popen(
            [sys.executable, os.path.abspath(__file__), resolver, str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, close_fds=True)
        #: the models the worker holds, evicted as the worker evicts them
        self.models: OrderedDict[bytes, None] = OrderedDict()
        self._released = False
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ)
        # Starting (importing LiteRT) is not part of any execution's time.
        try:
            self._receive(time.monotonic_ns() + STARTUP_LIMIT_NS)
        except WorkerTimeout:
            raise WorkerDied("the LiteRT worker did not start") from None

    def load(self, digest: bytes, content: bytes, limit_ns: int | None) -> tuple:
        """Have the worker hold an interpreter of the model (its answer): loading is
        preparation, not part of an execution's loop timeout."""
        if digest in self.models:
            self.models.move_to_end(digest)
            return ("ok", [])
        answer = self._exchange((digest, content, None, 0), limit_ns)
        if answer[0] == "ok":
            self.models[digest] = None
            while len(self.models) > KEPT_INTERPRETERS:
                self.models.popitem(last=False)
        return answer

    def run(self, digest: bytes, inputs: list, budget_bytes: int, limit_ns: int | None) -> tuple:
        """The worker's answer for one run of a loaded model, within the monotonic-ns time
        limit (None: no limit) and the memory budget of its outputs. Raises WorkerTimeout
        (the worker is then dead) or WorkerDied."""
        answer = self._exchange((digest, None, inputs, budget_bytes), limit_ns)
        if answer[0] != "ok":
            self.models.pop(digest, None)       # the worker dropped it (see serve)
        return answer

    def kept_tensors(self, content: bytes, inputs: list, budget_bytes: int, tensors: list[int],
                     limit_ns: int | None) -> tuple:
        """The worker's answer for a diagnostic run of a model (not kept), ``("ok", {tensor:
        value})`` for each of ``tensors`` in subgraph 0; raises as ``run``."""
        return self._exchange((None, content, inputs, budget_bytes, tensors), limit_ns)

    def _exchange(self, message: tuple, limit_ns: int | None) -> tuple:
        try:
            self.process.stdin.write(encode_frame(message))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self._death()) from None
        return self._receive(limit_ns)

    def _receive(self, limit_ns: int | None) -> tuple:
        header = self._read(_LENGTH.size, limit_ns)
        return pickle.loads(self._read(_LENGTH.unpack(header)[0], limit_ns))

    def _read(self, size: int, limit_ns: int | None) -> bytes:
        chunks, fd = [], self.process.stdout.fileno()
        while size:
            if not self._selector.select(seconds_until(limit_ns)):
                if limit_ns is None or time.monotonic_ns() < limit_ns:
                    continue        # a far limit, waited for in pieces
                self.close()
                raise WorkerTimeout()
            chunk = os.read(fd, min(size, 1 << 20))
            if not chunk:
                raise WorkerDied(self._death())
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _death(self) -> str:
        """How the worker ended, once it has."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.close()
            code = self.process.returncode
        self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, self.stderr.tell() - 2000))
        # LiteRT's INFO lines (a delegate created) say nothing of the death.
        said = [line for line in self.stderr.read().decode(errors="replace").strip().splitlines()
                if not line.startswith("INFO: ")][-5:]
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        self._release()
        return f"the LiteRT worker died ({how})" + (": " + " | ".join(said) if said else "")

    def close(self) -> None:
        """Kill the worker and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._release()

    def _release(self) -> None:
        if self._released:
            return
        self._released = True
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._selector.close()
        self.stderr.close()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
