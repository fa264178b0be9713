#!/usr/bin/env python3
"""The findings report of LiteRT as a driver under test: see fuzz/litert_report.py
(installed as the command nnhal-litert-report).

    python scripts/litert_report.py [--crashes crashes/] [--out reports/litert]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.litert_report import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
