#!/usr/bin/env python3
"""The nightly fuzz job, run the same way on a laptop and in CI: see fuzz/nightly.py
(installed as the command nnhal-nightly).

    python scripts/nightly.py [--minutes M | --seconds S] [--driver MODULE:FACTORY] [--jobs N]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.nightly import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
