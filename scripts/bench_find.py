#!/usr/bin/env python3
"""nnhal-bench-find (fuzz/bench_find.py) from a checkout, without installing: same flags, same output."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.bench_find import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
