#!/usr/bin/env python3
"""Time to find each planted bug of tests/fuzz/broken_drivers.py, per configuration of the
fuzzer: see fuzz/bench_find.py (installed as the command nnhal-bench-find).

    python scripts/bench_find.py [-r 5] [-t 120] [-j 1] [--configurations all] [--compare OLD.json]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.bench_find import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
