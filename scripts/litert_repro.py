#!/usr/bin/env python3
"""Write a standalone reproducer of a LiteRT discrepancy: see fuzz/litert_repro.py
(installed as the command nnhal-litert-repro).

    python scripts/litert_repro.py CASE_OR_REPRODUCER [--driver backends.litert:KERNELSET] [--out DIR]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.litert_repro import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
