"""Verify in two parts (issue 15, point 9): content changes are failures, packaging is not.

A bundle unpacked and packed again with the real ``zip -r`` (directory entries, new timestamps,
extra fields, another member order) still verifies; one changed file in such a re-pack is the
first failure listed, on the command line and on the desk's banner.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from core.bundle import verify_bundle
from core.bundle.format import task_entry
from core.bundle.opened import open_bundle
from tests.integration.conftest import Desk
from tests.reliability.test_bundle_tampering import case as case  # the exported-case fixture

ZIP = shutil.which("zip")


def _repack(bundle: Path, work: Path, change: str | None = None) -> Path:
    """Unpack ``bundle`` into a folder and pack it again as an analyst would, with ``zip -r``."""
    unpacked = work / "unpacked"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(unpacked)
    if change is not None:
        target = unpacked / change
        target.write_bytes(target.read_bytes().replace(b"answer", b"ANSWER", 1) + b"\n")
    out = work / "repacked.zip"
    if ZIP is not None:
        subprocess.run([ZIP, "-q", "-r", str(out), "."], cwd=unpacked, check=True)
    else:  # the same shape by hand: directory entries first, files after, fresh timestamps
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(unpacked.rglob("*")):
                zf.write(path, path.relative_to(unpacked).as_posix())
    return out


def test_an_untouched_bundle_re_zipped_with_zip_r_verifies(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, _ = case
    repacked = _repack(bundle, desk.root)
    with zipfile.ZipFile(repacked) as zf:
        assert any(i.is_dir() for i in zf.infolist()), "the re-pack should hold directory entries"
    report = verify_bundle(repacked)
    assert report.ok, report.failures
    assert any("directory entr" in note for note in report.packaging), report.packaging
    code, out, err = desk.cli("verify", str(repacked))
    assert code == 0 and "OK" in out and err == ""
    assert "packaging (not failures):" in out


def test_a_re_zipped_tampered_bundle_lists_the_real_change_first(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    changed = task_entry(task_id, "attempts.json")
    repacked = _repack(bundle, desk.root, change=changed)
    report = verify_bundle(repacked)
    assert not report.ok
    assert report.failures[0] == f"{changed}: sha256 mismatch (content changed)", report.failures
    assert not any(f.endswith("/") or "directory" in f for f in report.failures), report.failures
    opened = open_bundle(repacked)
    assert f"first: {changed}: sha256 mismatch" in opened.banner()


@pytest.mark.parametrize(("n", "word"), [(1, "1 problem)"), (2, "2 problems)")])
def test_failure_counts_are_pluralised(case: tuple[Desk, Path, str], n: int, word: str) -> None:
    desk, bundle, task_id = case
    names = [task_entry(task_id, "attempts.json"), task_entry(task_id, "feedback.json")][:n]
    with zipfile.ZipFile(bundle) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist()}
    for name in names:
        entries[name] += b" "
    out = desk.root / f"bad{n}.zip"
    with zipfile.ZipFile(out, "w") as zf:
        for name, blob in entries.items():
            zf.writestr(name, blob)
    report = verify_bundle(out)
    content = [f for f in report.failures if "content changed" in f]
    assert len(content) == n
    if len(report.failures) == n:
        assert f"FAILED ({word}" in report.summary()
