"""`make run` byte-compiles our modules, and the desk's start then reads that bytecode.

An editable install leaves ``core`` and ``desktop`` without bytecode, so the desk's first start
(every start, where PYTHONDONTWRITEBYTECODE is set) compiles ~230 modules from source. The
Makefile compiles them before starting the desk; these tests run its very command on a copy of
the sources and check, in a fresh interpreter that may not write bytecode, that the start-up
imports compile nothing of ours from source (and that, without the step, they do).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "Makefile"

# What the desk imports on its way to the live queue (``desktop.app`` and ``DeskLauncher.open``).
START_IMPORTS = "desktop.app, core.workspace, core.tasks.recovery, desktop.views.window.main_window"

# Records every module of ``root`` that is compiled from source rather than read from bytecode.
PROBE = """
import importlib._bootstrap_external as ext, sys
root = sys.argv[1]
sys.path.insert(0, root)
compiled = []
original = ext.SourceLoader.source_to_code
def source_to_code(self, data, path, *, _optimize=-1):
    if str(path).startswith(root):
        compiled.append(str(path))
    return original(self, data, path, _optimize=_optimize)
ext.SourceLoader.source_to_code = source_to_code
import {imports}
assert sys.modules["desktop.app"].__file__.startswith(root), sys.modules["desktop.app"].__file__
print(len(compiled))
"""


def _compile_command() -> list[str]:
    """The Makefile's compile step, as the arguments after ``$(BIN)/python``."""
    text = MAKEFILE.read_text(encoding="utf-8")
    found = re.search(r"^COMPILE_OURS\s*:=\s*(.+)$", text, re.MULTILINE)
    assert found is not None, "the Makefile no longer defines COMPILE_OURS"
    run_recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert run_recipe is not None
    steps = run_recipe.group(1).splitlines()
    compile_at = steps.index("\t$(BIN)/python $(COMPILE_OURS)")
    assert compile_at < steps.index("\t$(BIN)/evidence-desk"), "compile before the desk starts"
    return found.group(1).split()


def _copy_sources(into: Path) -> None:
    for part in ("core", "desktop", "resources"):
        shutil.copytree(ROOT / part, into / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _compiled_from_source(root: Path) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONPATH")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing this probe does may change the answer
    env["QT_QPA_PLATFORM"] = "offscreen"
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("{imports}", START_IMPORTS), str(root)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


def test_the_make_run_compile_step_leaves_bytecode_the_start_reads(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    assert _compiled_from_source(tmp_path) > 100  # without the step: compiled on every start

    done = subprocess.run(
        [sys.executable, *_compile_command()], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr

    missing = [
        str(py.relative_to(tmp_path))
        for part in ("core", "desktop")
        for py in (tmp_path / part).rglob("*.py")
        if not Path(importlib.util.cache_from_source(str(py))).is_file()
    ]
    assert missing == []
    assert _compiled_from_source(tmp_path) == 0


def test_a_source_edited_after_the_compile_is_compiled_again(tmp_path: Path) -> None:
    """Bytecode never hides an edit: the step is safe to run before every start."""
    _copy_sources(tmp_path)
    subprocess.run([sys.executable, *_compile_command()], cwd=tmp_path, check=True, timeout=300)
    edited = tmp_path / "desktop" / "app.py"
    edited.write_text(
        edited.read_text(encoding="utf-8") + "\nEDITED_AFTER_COMPILE = True\n", encoding="utf-8"
    )
    assert _compiled_from_source(tmp_path) == 1
    subprocess.run([sys.executable, *_compile_command()], cwd=tmp_path, check=True, timeout=300)
    assert _compiled_from_source(tmp_path) == 0
