#!/usr/bin/env python3
"""Mutation score of the harness: how many mutants of the bundled driver a fuzz run against
the unmutated driver kills: see fuzz/bench_mutants.py (installed as the command
nnhal-bench-mutants).

    python scripts/bench_mutants.py [-n 100] [-t 60] [-j 1] [--seed 0] [--from-json REPORT.json]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.bench_mutants import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
