#!/usr/bin/env python3
"""Show fuzz inputs as the harness sees them: see fuzz/show_case.py (installed as the
command nnhal-show-case).

    python scripts/show_case.py FILE... [--dot OUT.dot] [--png]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.show_case import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
