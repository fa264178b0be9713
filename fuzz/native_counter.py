"""A compiled block-hit counter for the fuzzing process, built on first use.

atheris calls ``atheris._trace_branch(number)`` at every instrumented basic block. The
cheapest pure-Python target for that call is ``list.append`` (fuzz/branch_counters.py),
which still leaves a conversion of every recorded number at the end of each input: about
55 ns a hit in all, some 100 us per fuzz input. The C function here does the counting at
the call itself, into the 8-bit counter array libFuzzer reads, in about 20 ns, and leaves
nothing to convert.

The source is compiled with the C compiler Python was built with (``sysconfig``'s CC) into
a per-user cache, keyed by the source and the interpreter's ABI, and loaded from there on
later runs. Without a compiler (or on any build failure) ``load()`` returns None and the
fuzzer counts with list.append, as before. So it does in a frozen fuzzer (PyInstaller, as
OSS-Fuzz and ClusterFuzzLite build Python fuzzers): it carries no Python headers, and the
images it runs on have no compiler.

The counter array is process-wide state of the module: ``bind`` points it at the memory
of a numpy array that the caller keeps alive while bound.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Optional

MODULE_NAME = "_nnhal_hit_counter"
#: Where built modules are kept (default: the user's cache folder).
CACHE_DIR_ENV = "NNHAL_FUZZ_NATIVE_CACHE"
#: Set (to anything) to use the pure-Python counting even where a compiler is available.
DISABLE_ENV = "NNHAL_FUZZ_NO_NATIVE_COUNTER"
BUILD_TIMEOUT_S = 120

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The counters libFuzzer reads (8 bits each, saturating), and the highest counter
   number hit since bind(): the caller registers the array with libFuzzer up to it. */
static uint8_t *counters = NULL;
static Py_ssize_t capacity = 0;
static Py_ssize_t highest = -1;

static PyObject *hit(PyObject *module, PyObject *number) {
    Py_ssize_t index = PyLong_AsSsize_t(number);
    if (index < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "counter numbers are >= 0");
        return NULL;
    }
    if (counters == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no counter array bound");
        return NULL;
    }
    if (index >= capacity)
        index %= capacity;          /* numbers beyond the array share counters */
    if (index > highest)
        highest = index;
    if (counters[index] != 255)
        counters[index]++;
    Py_RETURN_NONE;
}

static PyObject *bind(PyObject *module, PyObject *args) {
    PyObject *address;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "On", &address, &size))
        return NULL;
    void *pointer = PyLong_AsVoidPtr(address);
    if (pointer == NULL && PyErr_Occurred())
        return NULL;
    if (size <= 0) {
        PyErr_SetString(PyExc_ValueError, "capacity must be > 0");
        return NULL;
    }
    counters = (uint8_t *)pointer;
    capacity = size;
    highest = -1;
    Py_RETURN_NONE;
}

static PyObject *unbind(PyObject *module, PyObject *unused) {
    counters = NULL;
    capacity = 0;
    highest = -1;
    Py_RETURN_NONE;
}

static PyObject *get_highest(PyObject *module, PyObject *unused) {
    return PyLong_FromSsize_t(highest);
}

static PyMethodDef methods[] = {
    {"hit", hit, METH_O, "Count one hit of the block with this counter number."},
    {"bind", bind, METH_VARARGS, "bind(address, capacity): count into this uint8 array."},
    {"unbind", unbind, METH_NOARGS, "Stop counting (hit() raises until bound again)."},
    {"highest", get_highest, METH_NOARGS, "The highest counter index hit since bind()."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "%(name)s", "Block-hit counting for the fuzz harness.", -1, methods,
};

PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&module_def); }
""".replace("%(name)s", MODULE_NAME)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get(CACHE_DIR_ENV) or Path(base) / "nnhal-fuzz")


def built_path(folder: Path) -> Path:
    """The module's file for this source and this interpreter's ABI."""
    key = hashlib.sha256((SOURCE + sys.version + sysconfig.get_platform()).encode()).hexdigest()[:16]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return folder / f"{MODULE_NAME}-{key}{suffix}"


def compiler_command(source: Path, output: Path) -> Optional[list[str]]:
    compiler = sysconfig.get_config_var("CC") or "cc"
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").exists():
        return None
    return [*shlex.split(compiler), "-shared", "-fPIC", "-O2", f"-I{include}",
            str(source), "-o", str(output)]


def build(folder: Path) -> Optional[Path]:
    """Compile the module into ``folder`` (atomically: parallel fuzzing processes may
    build at once); its path, or None on any failure."""
    target = built_path(folder)
    if target.exists():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            source = Path(scratch) / f"{MODULE_NAME}.c"
            source.write_text(SOURCE)
            output = Path(scratch) / target.name
            command = compiler_command(source, output)
            if command is None:
                return None
            result = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            if result.returncode != 0 or not output.exists():
                return None
            os.replace(output, target)
    except (OSError, subprocess.SubprocessError):
        return None
    return target


def load(folder: Optional[Path] = None) -> Optional[ModuleType]:
    """The compiled counter module (built if need be), or None where it cannot be had."""
    if os.environ.get(DISABLE_ENV) or getattr(sys, "frozen", False):
        return None
    path = build(folder or cache_dir())
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        return None
    return module
