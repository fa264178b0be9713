#!/usr/bin/env python3
"""nnhal-litert-repro (fuzz/litert_repro.py) from a checkout, without installing: same flags, same output."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.litert_repro import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
