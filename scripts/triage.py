#!/usr/bin/env python3
"""Triage fuzzer artifacts: reproduce, classify, minimise, sign and store each one: see
fuzz/triage.py (installed as the command nnhal-triage).

    python scripts/triage.py [--driver MODULE:FACTORY] [--reference MODULE:FACTORY|none] [--out DIR] [ARTIFACT ...]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.triage import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
