#!/usr/bin/env python3
"""The PyInstaller arguments that freeze fuzz/driver_fuzz.py into one self-contained fuzzer,
as OSS-Fuzz's and ClusterFuzzLite's ``compile_python_fuzzer`` does (one-file PyInstaller).

    python scripts/freeze_args.py        # one argument a line, for build.sh

PyInstaller follows import statements only. The driver loads its operation modules by
name (driver/operations/registry.py), and ``--driver`` names a module too, so every module
of the project's packages is a hidden import: the list is read from the packages on disk
when the fuzzer is built, never written down (modules move and regroup). The packages are
the ones pyproject.toml installs. Files inside them that are not Python are added as data
(code reading files beside itself through ``__file__`` finds them in the frozen bundle).
Both .clusterfuzzlite/build.sh and the frozen-fuzzer test take the arguments from here.
"""
import fnmatch
import os
import sys
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Loaded by name inside numpy 2.3 and later, which PyInstaller's numpy hook may miss (a
#: missing hidden import is only a warning for older numpy).
NUMPY_HIDDEN = ("numpy._core._exceptions",)


def project_packages(root: Path = REPO_ROOT) -> list[str]:
    """The top-level packages pyproject.toml installs (its packages.find include patterns)."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(path.name for path in root.iterdir()
                  if (path / "__init__.py").is_file() and any(fnmatch.fnmatch(path.name, p) for p in patterns))


#: Packages the frozen fuzzer leaves out, also where a module of fuzz/ imports them (the
#: LiteRT reproducers): an engine over a real runtime runs that runtime in a worker
#: process of a real Python (backends/litert/worker.py), which a one-file binary does not have.
NOT_FROZEN = frozenset({"backends"})


def frozen_files(root: Path) -> list[Path]:
    """Every file of the project's packages the frozen fuzzer bundles."""
    return sorted(path for package in project_packages(root) if package not in NOT_FROZEN
                  for path in (root / package).rglob("*") if path.is_file() and "__pycache__" not in path.parts)


def hidden_imports(root: Path = REPO_ROOT) -> list[str]:
    """Every module and package of the project's packages, dotted."""
    dotted = [path.relative_to(root).with_suffix("").parts for path in frozen_files(root) if path.suffix == ".py"]
    return [".".join(parts[:-1] if parts[-1] == "__init__" else parts) for parts in dotted]


def data_files(root: Path = REPO_ROOT) -> list[tuple[Path, str]]:
    """(file, folder in the bundle) of every file in the packages that is not Python."""
    return [(path, str(path.parent.relative_to(root))) for path in frozen_files(root)
            if path.suffix not in (".py", ".pyc", ".so")]


def pyinstaller_args(root: Path = REPO_ROOT) -> list[str]:
    """The arguments for ``compile_python_fuzzer fuzz/driver_fuzz.py`` (and PyInstaller)."""
    args = [f"--paths={root}"]
    args += [f"--hidden-import={name}" for name in (*hidden_imports(root), *NUMPY_HIDDEN)]
    args += [f"--exclude-module={package}" for package in sorted(NOT_FROZEN)]
    args += [f"--add-data={path}{os.pathsep}{folder}" for path, folder in data_files(root)]
    return args


if __name__ == "__main__":
    print("\n".join(pyinstaller_args(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else REPO_ROOT)))
