#!/usr/bin/env python3
"""LiteRT crashes running IF

LiteRT 2.3.0, kernel set AUTO (OpResolverType.AUTO).
The model is one NNAPI operation, lowered to TFLite builtins:
    IF(TENSOR_BOOL8[1] = [True], subgraph 1, subgraph 1, TENSOR_FLOAT32[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]) -> TENSOR_FLOAT32[]
  subgraph 1:
    MAXIMUM(TENSOR_FLOAT32[], TENSOR_FLOAT32[]) -> TENSOR_FLOAT32[]
673e92e2f18a63ac.tflite is the model LiteRT ran, 673e92e2f18a63ac.npz its inputs (input_<i>)
and the outputs NNAPI's semantics give for them (expected_<k>), as a reference
driver computes them.
The process running LiteRT dies: the script runs it in a child process.

    python 673e92e2f18a63ac.py    # needs only numpy and ai-edge-litert

prints the inputs, LiteRT's outputs and the expected ones, and the first and worst elements
that differ; exit status 1 while LiteRT still disagrees, 0 once it agrees.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

# --- the finding ---------------------------------------------------------------------------
NAME = '673e92e2f18a63ac'
KERNEL_SET = 'AUTO'
#: Per output the reference computed: (index, NNAPI's numpy type, atol, rtol), the
#: tolerance being |got - expected| <= atol + rtol * |expected| (the Android CTS's).
OUTPUTS = [(0, 'float32', 1e-05, 5.960464477539062e-07)]
#: LiteRT crashed the process it ran in: it runs in a child process.
IN_CHILD = True
#: How the reference failed the execution, where NNAPI defines no result (None: it ran).
REFERENCE_FAILS = None
# --- end of the finding --------------------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
#: Arrays up to this many elements are printed whole.
PRINTED = 16


def litert_version():
    try:
        from importlib.metadata import version
        return version("ai-edge-litert")
    except Exception:
        import ai_edge_litert
        return getattr(ai_edge_litert, "__version__", "unknown")


def invoke(inputs):
    """LiteRT's outputs for ``inputs``, with the finding's kernel set and one thread."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    interpreter = Interpreter(model_path=os.path.join(HERE, NAME + ".tflite"), num_threads=1,
                              experimental_op_resolver_type=OpResolverType[KERNEL_SET])
    details = interpreter.get_input_details()
    for detail, value in zip(details, inputs):
        # A dimension the model leaves unknown takes the input's.
        if tuple(detail["shape"]) != value.shape:
            interpreter.resize_tensor_input(detail["index"], list(value.shape), strict=False)
    interpreter.allocate_tensors()
    for detail, value in zip(details, inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(detail["index"]).copy()
            for detail in interpreter.get_output_details()]


def invoke_in_child(inputs):
    """``invoke`` in a child process (this script with --child), so that a native crash of
    LiteRT is reported instead of ending this process. None and the way it ended if it died."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "outputs.npz")
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path],
                               capture_output=True, text=True)
        if child.returncode != 0:
            how = f"signal {-child.returncode}" if child.returncode < 0 else f"exit status {child.returncode}"
            said = child.stderr.strip()[-1500:]
            return None, f"the process running LiteRT died ({how})" + (f": {said}" if said else "")
        with np.load(path) as saved:
            return [saved[f"arr_{k}"] for k in range(len(saved.files))], None


def compare(got, expected, atol, rtol):
    """How ``got`` differs from ``expected`` beyond the tolerance, as a dict (None: within
    it): the count of elements outside it, and the first and the worst of them (index,
    got, expected, absolute and relative difference). Computed in float64."""
    got64, want64 = np.asarray(got, np.float64).ravel(), np.asarray(expected, np.float64).ravel()
    difference = np.abs(got64 - want64)
    outside = ~(difference <= atol + rtol * np.abs(want64))     # NaN is outside too
    if not outside.any():
        return None
    bad = np.flatnonzero(outside)
    worst = int(bad[np.argmax(np.nan_to_num(difference[bad], nan=np.inf))])

    def element(k):
        relative = difference[k] / abs(want64[k]) if want64[k] != 0 else float("inf")
        return {"index": [int(i) for i in np.unravel_index(k, np.shape(expected))],
                "got": float(got64[k]), "expected": float(want64[k]),
                "abs": float(difference[k]), "rel": float(relative)}
    return {"count": int(bad.size), "size": int(want64.size), "first": element(int(bad[0])),
            "worst": element(worst)}


def shown(array):
    array = np.asarray(array)
    return np.array2string(array.ravel(), max_line_width=100) if array.size <= PRINTED else \
        f"{array.dtype}{list(array.shape)}"


def main():
    with np.load(os.path.join(HERE, NAME + ".npz")) as data:
        inputs = [data[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in data.files))]
        expected = {index: data[f"expected_{index}"] for index, _, _, _ in OUTPUTS}
    if sys.argv[1:2] == ["--child"]:
        np.savez(sys.argv[2], *invoke(inputs))
        return 0
    print(f"LiteRT {litert_version()}, kernel set {KERNEL_SET}, model {NAME}.tflite")
    for i, value in enumerate(inputs):
        print(f"input {i}: {value.dtype}{list(value.shape)} {shown(value)}")
    try:
        outputs, death = invoke_in_child(inputs) if IN_CHILD else (invoke(inputs), None)
    except Exception as error:          # LiteRT refused or failed the model
        if REFERENCE_FAILS:
            print(f"not reproduced: LiteRT refuses it too: {type(error).__name__}: {error}")
            return 0
        print(f"REPRODUCED: LiteRT failed: {type(error).__name__}: {error}")
        return 1
    if death is not None:
        for index, _, _, _ in OUTPUTS:
            print(f"output {index}: expected {shown(expected[index])}")
        print(f"REPRODUCED: {death}")
        return 1
    if REFERENCE_FAILS:
        for k, value in enumerate(outputs):
            print(f"output {k}: {shown(value)}")
        print(f"REPRODUCED: LiteRT returns outputs where NNAPI defines none (the reference fails "
              f"the execution with {REFERENCE_FAILS})")
        return 1
    reproduced = False
    for index, dtype, atol, rtol in OUTPUTS:
        # NNAPI's type of the output: LiteRT computes a float16 output in float32 here,
        # and NNAPI rounds it once to float16, as a float16 model does.
        got, want = outputs[index].astype(dtype), expected[index]
        print(f"output {index}: got {shown(got)}\n          expected {shown(want)}")
        if got.shape != want.shape:
            print(f"  shape {list(got.shape)}, expected {list(want.shape)}")
            reproduced = True
            continue
        found = compare(got, want, atol, rtol)
        if found is None:
            print(f"  within the tolerance atol={atol:g} rtol={rtol:g}")
            continue
        reproduced = True
        print(f"  {found['count']} of {found['size']} elements outside the tolerance "
              f"atol={atol:g} rtol={rtol:g}")
        for which in ("first", "worst"):
            e = found[which]
            print(f"  {which}: index {e['index']}: got {e['got']:.9g}, expected {e['expected']:.9g}, "
                  f"abs diff {e['abs']:.6g}, rel diff {e['rel']:.6g}")
    print("REPRODUCED" if reproduced else "not reproduced: LiteRT agrees with the expected outputs")
    return 1 if reproduced else 0


if __name__ == "__main__":
    sys.exit(main())
