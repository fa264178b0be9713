"""The bundled driver as it was at a git revision, importable beside today's as the package
``driver_pristine``: the reference to fuzz a changed driver against its last release.

    python fuzz/driver_fuzz.py --reference-rev v1.2 fuzz-work/ corpus/   # or any commit, HEAD~3, ...

``install(rev)`` copies the revision's ``driver/`` into a folder of the system's temporary
directory named by the commit (made once, then reused), rewrites its absolute imports of
``driver`` to ``driver_pristine``, puts the folder first on ``sys.path`` and on
``$PYTHONPATH`` (libFuzzer's -fork, -jobs and -minimize_crash children import it too), and
returns the reference spec, ``driver_pristine:SampleDriver``.

The copy speaks today's HAL interface: its ``hal``, ``memory`` and ``sync_fence`` modules
are today's ``driver.hal``, ``driver.memory`` and ``driver.sync_fence`` (SHARED: the types,
memory pools and fences a client hands any driver; the harness makes them from today's,
and a copy with classes of its own would refuse them as foreign objects). A revision whose
driver needs an interface other than today's cannot serve as the reference.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "driver"
PRISTINE_PACKAGE = "driver_pristine"
PRISTINE_SPEC = f"{PRISTINE_PACKAGE}:SampleDriver"
#: ``import driver...`` / ``from driver... import`` at the start of a line (the bundled
#: driver imports itself relatively; an absolute import would load today's driver instead).
ABSOLUTE_IMPORT = re.compile(rf"^(\s*(?:from|import)\s+){PACKAGE}(?=[\s.])", re.MULTILINE)


def resolve(rev: str, repo: Path = REPO_ROOT) -> str:
    """The commit ``rev`` names (a SystemExit saying why, when it names none)."""
    result = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"--reference-rev: {rev!r} names no commit of {repo}")
    return result.stdout.strip()


#: The parts of the driver package that make up the HAL interface: its types, the memory
#: pools (hidl_memory) and the sync fences a client hands any driver.
SHARED = ("hal", "memory", "sync_fence")

#: What replaces a shared module or package in the copy: today's, with every submodule
#: (the import system returns what sys.modules holds once a module has run).
SHARED_MODULE = '''"""Today's {name} (see fuzz/pristine.py)."""
import importlib
import pkgutil
import sys

import {name}

for _module in pkgutil.iter_modules(getattr({name}, "__path__", [])):
    sys.modules[f"{{__name__}}.{{_module.name}}"] = importlib.import_module(f"{name}.{{_module.name}}")
sys.modules[__name__] = {name}
'''


def share_with_today(package: Path) -> None:
    """Replace the copy's SHARED modules by today's."""
    for name in SHARED:
        shim = SHARED_MODULE.format(name=f"{PACKAGE}.{name}")
        if (package / name).is_dir():
            shutil.rmtree(package / name)
            (package / name).mkdir()
            (package / name / "__init__.py").write_text(shim)
        else:
            (package / f"{name}.py").write_text(shim)


def rewrite_imports(source: str) -> str:
    return ABSOLUTE_IMPORT.sub(rf"\1{PRISTINE_PACKAGE}", source)


def copy_driver(commit: str, destination: Path, repo: Path = REPO_ROOT) -> Path:
    """Write the commit's driver/ as ``destination/driver_pristine`` and return that folder."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit, PACKAGE],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(destination, filter="data")
    package = destination / PRISTINE_PACKAGE
    (destination / PACKAGE).rename(package)
    for module in package.rglob("*.py"):
        module.write_text(rewrite_imports(module.read_text()))
    share_with_today(package)
    return package


def pristine_root(rev: str, repo: Path = REPO_ROOT) -> Path:
    """The folder holding ``driver_pristine`` as at ``rev``, made if it is not there yet
    (built aside and renamed into place, so that a concurrent process never sees half)."""
    commit = resolve(rev, repo)
    # Named by this module's own content too: a copy made by another version of it is not taken.
    maker = hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:8]
    root = Path(tempfile.gettempdir()) / f"nnhal-{PRISTINE_PACKAGE}-{commit}-{maker}"
    if not (root / PRISTINE_PACKAGE).is_dir():
        building = Path(tempfile.mkdtemp(prefix=f"{root.name}-"))
        copy_driver(commit, building, repo)
        try:
            building.rename(root)
        except OSError:          # another process put it there first
            shutil.rmtree(building, ignore_errors=True)
    return root


def install(rev: str, repo: Path = REPO_ROOT) -> str:
    """Make ``driver_pristine`` (the driver at ``rev``) importable here and in child
    processes; returns its spec for ``--reference``."""
    root = str(pristine_root(rev, repo))
    if root not in sys.path:
        sys.path.insert(0, root)
    path = os.environ.get("PYTHONPATH")
    if root not in (path or "").split(os.pathsep):
        os.environ["PYTHONPATH"] = root + (os.pathsep + path if path else "")
    return PRISTINE_SPEC
