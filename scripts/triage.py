#!/usr/bin/env python3
"""nnhal-triage (fuzz/triage.py) from a checkout, without installing: same flags, same output."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.triage import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
