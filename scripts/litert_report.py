#!/usr/bin/env python3
"""nnhal-litert-report (fuzz/litert_report.py) from a checkout, without installing: same flags, same output."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.litert_report import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
