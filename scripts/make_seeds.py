#!/usr/bin/env python3
"""Write the fuzzer's seed inputs: the hand-written models of fuzz/seed_models.py and every
conformance model of ../shared/conformance, each encoded with fuzz.codec.

    python scripts/make_seeds.py [OUT_DIR] [--own-only] [--conformance DIR]
                                 [--exact] [--max-literal N] [--max-case-bytes N]
                                 [--merge CORPUS_DIR] [-- LIBFUZZER_FLAGS...]

OUT_DIR defaults to seeds/ (not committed). Conformance models are re-laid out so that the
decoder places their constants and request buffers (the form the structural mutations keep
valid), with literal values kept exactly up to --max-literal bytes (bulk data beyond that
becomes generated values of the same size), output buffers zeroed, all request buffers in
one pool and a short loop timeout.
--exact encodes each model exactly as the conformance loader builds it instead (so are
models too big for the decoder to fill). Models whose data would exceed --max-case-bytes
(default 256 KiB; 0: no limit) are skipped: they would only slow the fuzzer down.

--own-only writes the hand-written models alone: the committed corpus/ must come only from
the project's own models and what fuzzing found from them, never from ../shared.

--merge CORPUS_DIR then runs libFuzzer's -merge=1 through fuzz/driver_fuzz.py, adding to
CORPUS_DIR the seeds that bring new coverage.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

from fuzz import codec
from fuzz.case import ExecutionPath, FuzzCase
from fuzz.seed_models import SEED_LOOP_TIMEOUT_NS, seed_specs

SHARED_CONFORMANCE = REPO_ROOT.parent / "shared" / "conformance"
DEFAULT_MAX_LITERAL = 256
DEFAULT_MAX_CASE_BYTES = 256 * 1024


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]


@dataclass
class Written:
    """What this run wrote so far: contents (by digest) and file names."""
    digests: set[bytes] = field(default_factory=set)
    names: set[str] = field(default_factory=set)


def write_seed(out_dir: Path, name: str, data: bytes, written: Written) -> bool:
    """Write one seed unless an identical one was written already."""
    digest = hashlib.sha1(data).digest()
    if digest in written.digests:
        return False
    file_name = safe_name(name)
    if file_name in written.names:            # two names cut to the same prefix
        file_name = f"{file_name}-{digest.hex()[:8]}"
    written.digests.add(digest)
    written.names.add(file_name)
    (out_dir / file_name).write_bytes(data)
    return True


def own_seeds(out_dir: Path, written: Written) -> int:
    return sum(write_seed(out_dir, f"own-{name}", codec.serialize(spec), written)
               for name, spec in seed_specs().items())


def case_bytes(case: FuzzCase) -> int:
    pools = [p.hidlMemory.size for p in case.request.pools if p.hidlMemory is not None]
    return len(case.model.operandValues) + sum(m.size for m in case.model.pools) + sum(pools)


def conformance_seeds(out_dir: Path, root: Path, written: Written, *, exact: bool,
                      max_literal: int, max_case_bytes: int) -> tuple[int, int]:
    from hal_client.conformance.loader import (build_model, build_request, find_model_files,
                                               load_examples)
    paths = list(ExecutionPath)
    count = skipped = 0
    for file in find_model_files([root]):
        version = file.parent.name
        for example in load_examples(file):
            case = FuzzCase(build_model(example), build_request(example))
            size = case_bytes(case)
            if max_case_bytes and size > max_case_bytes:
                skipped += 1
                continue
            # Spread the seeds over the execution paths; loops that never end stop soon.
            case.choices.path = paths[count % len(paths)]
            case.choices.second_path = paths[(count + 1) % len(paths)]
            case.choices.loopTimeoutDuration_ns = SEED_LOOP_TIMEOUT_NS
            if exact or size > codec.FILL_BUDGET // 2:
                data = codec.encode(case)
            else:
                data = codec.serialize(codec.relayout(case, max_literal=max_literal,
                                                      one_request_pool=True))
            count += write_seed(out_dir, f"cts-{version}-{example.name}", data, written)
    return count, skipped


def merge(corpus: Path, seeds: Path, libfuzzer_flags: list[str]) -> int:
    corpus.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(REPO_ROOT / "fuzz" / "driver_fuzz.py"), "-merge=1",
               *libfuzzer_flags, str(corpus), str(seeds)]
    print("running:", " ".join(command), flush=True)
    return subprocess.call(command, cwd=REPO_ROOT)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    libfuzzer_flags: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, libfuzzer_flags = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=str(REPO_ROOT / "seeds"))
    parser.add_argument("--own-only", action="store_true",
                        help="only the hand-written models of fuzz/seed_models.py")
    parser.add_argument("--conformance", type=Path, default=SHARED_CONFORMANCE,
                        help="conformance models folder (default: ../shared/conformance)")
    parser.add_argument("--exact", action="store_true",
                        help="encode conformance models exactly as loaded")
    parser.add_argument("--max-literal", type=int, default=DEFAULT_MAX_LITERAL)
    parser.add_argument("--max-case-bytes", type=int, default=DEFAULT_MAX_CASE_BYTES)
    parser.add_argument("--merge", type=Path, metavar="CORPUS_DIR",
                        help="minimise the seeds into this corpus with libFuzzer -merge=1")
    args = parser.parse_args(argv)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = Written()
    own = own_seeds(out_dir, written)
    print(f"{own} hand-written seeds")
    if not args.own_only:
        if args.conformance.is_dir():
            count, skipped = conformance_seeds(
                out_dir, args.conformance, written, exact=args.exact,
                max_literal=args.max_literal, max_case_bytes=args.max_case_bytes)
            limit = (f" ({skipped} with more than {args.max_case_bytes} bytes of data skipped)"
                     if args.max_case_bytes else "")
            print(f"{count} conformance seeds{limit}")
        else:
            print(f"{args.conformance}: not found; conformance seeds skipped")
    print(f"written to {out_dir}")
    if args.merge is not None:
        return merge(args.merge, out_dir, libfuzzer_flags)
    return 0


if __name__ == "__main__":
    sys.exit(main())
