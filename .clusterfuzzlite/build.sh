#!/bin/bash -eu
# Builds fuzz/driver_fuzz.py for ClusterFuzzLite and OSS-Fuzz (run in $SRC/nnhal-fuzz).
pip3 install .

# PyInstaller arguments from the packages as they are now: the hidden imports of the
# modules the driver loads by name, and the packages' data files.
mapfile -t freeze_args < <(python3 scripts/freeze_args.py)
compile_python_fuzzer fuzz/driver_fuzz.py "${freeze_args[@]}"

# libFuzzer starts from the seed corpus when ClusterFuzzLite has no corpus of its own yet.
(cd corpus && zip -q -r "$OUT/driver_fuzz_seed_corpus.zip" .)
