"""Adversarial bundles: every way someone might alter a case bundle must be named by ``verify``.

Bundles here come from real runs through the command line on the scripted provider; tampering is
done with plain ``zipfile`` the way an editor with the bundle in hand would do it, including the
careful forger who recomputes every hash in the manifest.
"""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from core.bundle import verify_bundle
from core.bundle.format import MANIFEST_NAME, canonical, sha256_hex, task_entry
from tests.integration.conftest import Desk, verdict

Entries = dict[str, bytes]


def force_accepted_task(desk: Desk) -> str:
    """A task whose own chained log ends in needs_review / force_accepted (validator never satisfied)."""
    desk.env(max_validation_attempts=2)
    desk.script(
        [
            {"model": "agent", "turns": [{"content": f"answer {i}"} for i in range(4)]},
            {"model": "validator", "turns": [{"content": verdict("rejected", 0.15, issues=["wrong"])}]},
        ]
    )
    task = desk.cli_json("run", "Question?")
    assert task["status"] == "needs_review" and task["validation_outcome"] == "force_accepted"
    return str(task["id"])


@pytest.fixture
def case(desk: Desk) -> tuple[Desk, Path, str]:
    task_id = force_accepted_task(desk)
    bundle = desk.root / "case.zip"
    code, _, err = desk.cli("export", task_id, "-o", str(bundle))
    assert code == 0, err
    return desk, bundle, task_id


def read_entries(path: Path) -> Entries:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}


def write_entries(out: Path, entries: Entries, *, dirs: bool = False) -> Path:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        if dirs:  # what `zip -r` or a file manager adds when re-packing an unpacked bundle
            for d in sorted({n.rsplit("/", 1)[0] + "/" for n in entries if "/" in n}):
                zf.writestr(zipfile.ZipInfo(d), b"")
        for name, blob in entries.items():
            zf.writestr(name, blob)
    return out


def rewrite(src: Path, out: Path, change: Callable[[Entries], None]) -> Path:
    entries = read_entries(src)
    change(entries)
    return write_entries(out, entries)


def recompute_manifest(entries: Entries) -> None:
    """The careful forger: every entry's hash and size in the manifest made to match again."""
    manifest = json.loads(entries[MANIFEST_NAME])
    for name in manifest["entries"]:
        if name in entries:
            manifest["entries"][name] = {"sha256": sha256_hex(entries[name]), "size": len(entries[name])}
    entries[MANIFEST_NAME] = (canonical(manifest) + "\n").encode()


def forge_task_json(task_id: str) -> Callable[[Entries], None]:
    name = task_entry(task_id, "task.json")

    def change(entries: Entries) -> None:
        task = json.loads(entries[name])
        task.update(status="closed", validation_outcome="accepted", latest_score=0.99)
        entries[name] = (canonical(task) + "\n").encode()
        recompute_manifest(entries)

    return change


# ---------------------------------------------------------------------- F12: forged snapshots
def test_forged_task_json_with_recomputed_manifest_fails_verify_and_import(
    case: tuple[Desk, Path, str],
) -> None:
    desk, bundle, task_id = case
    forged = rewrite(bundle, desk.root / "forged.zip", forge_task_json(task_id))
    report = verify_bundle(forged)
    assert not report.ok
    name = task_entry(task_id, "task.json")
    first = report.failures[0]
    assert first.startswith(name) and "closed" in first and "needs_review" in first, report.failures
    assert any("0.99" in f for f in report.failures), report.failures

    code, out, err = desk.cli("verify", str(forged))
    assert code == 4 and out == "" and name in err
    other = desk.root / "other.sqlite3"
    code, _, err = desk.cli("import", str(forged), "--db", str(other), "--trust")
    assert code == 4 and "refusing to import" in err
    code, out, _ = desk.cli("list", "--db", str(other), "--json")
    assert json.loads(out) == []


def test_forged_validation_verdict_fails_verify(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    name = task_entry(task_id, "validations.json")

    def change(entries: Entries) -> None:
        rows = json.loads(entries[name])
        rows[-1]["status"] = "accepted"
        rows[-1]["result"]["status"] = "accepted"
        rows[-1]["result"]["score"] = 0.97
        entries[name] = (canonical(rows) + "\n").encode()
        recompute_manifest(entries)

    report = verify_bundle(rewrite(bundle, desk.root / "v.zip", change))
    assert report.failures and report.failures[0].startswith(name), report.failures
    assert "task_validation_snapshotted" in report.failures[0]


def test_untouched_bundle_verifies_even_repacked_with_directory_entries(
    case: tuple[Desk, Path, str],
) -> None:
    desk, bundle, _ = case
    assert verify_bundle(bundle).ok
    repacked = write_entries(desk.root / "repacked.zip", read_entries(bundle), dirs=True)
    with zipfile.ZipFile(repacked) as zf:
        assert any(i.is_dir() for i in zf.infolist())
    report = verify_bundle(repacked)
    assert report.ok, report.failures
    code, out, err = desk.cli("verify", str(repacked))
    assert code == 0 and "OK" in out and err == ""


# ---------------------------------------------------------------------- F14: where failures go
def test_verify_failures_go_to_stderr_with_the_content_change_first(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    name = task_entry(task_id, "feedback.json")
    bad = rewrite(bundle, desk.root / "bad.zip", lambda e: e.__setitem__(name, e[name] + b" "))
    code, out, err = desk.cli("verify", str(bad))
    assert code == 4 and out == ""
    lines = [line.strip() for line in err.splitlines() if line.strip().startswith("- ")]
    assert lines[0] == f"- {name}: sha256 mismatch (content changed)", err


# ---------------------------------------------------------------------- F10: zip bombs
BOMB_BYTES = 600 * 1024 * 1024  # above the 512 MiB per-entry limit; the test itself never holds it


def _zeros_entry(zf: zipfile.ZipFile, name: str, size: int) -> None:
    chunk = bytes(1024 * 1024)
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with zf.open(info, "w", force_zip64=True) as fh:
        for _ in range(size // len(chunk)):
            fh.write(chunk)


def _bomb(src: Path, out: Path, name: str, size: int) -> Path:
    """A small file holding a huge, highly compressible entry in place of a real one."""
    entries = read_entries(src)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for n, blob in entries.items():
            if n == name:
                _zeros_entry(zf, n, size)
            else:
                zf.writestr(n, blob)
    return out


def _peak_while(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_zip_bomb_is_refused_from_its_header_without_inflating(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    name = task_entry(task_id, "feedback.json")
    bomb = _bomb(bundle, desk.root / "bomb.zip", name, BOMB_BYTES)
    assert bomb.stat().st_size < 2 * 1024 * 1024
    reports = []
    peak = _peak_while(lambda: reports.append(verify_bundle(bomb)))
    (report,) = reports
    assert not report.ok
    assert any(f.startswith(name) and "limit" in f for f in report.failures), report.failures
    assert peak < 32 * 1024 * 1024, peak


def _lie_about_size(path: Path, name: str, declared: int) -> None:
    """Patch the entry's uncompressed size in its local header and central directory record."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    local = info.header_offset
    assert raw[local : local + 4] == b"PK\x03\x04"
    raw[local + 22 : local + 26] = declared.to_bytes(4, "little")
    central = raw.find(b"PK\x01\x02")
    while central != -1:
        nlen = int.from_bytes(raw[central + 28 : central + 30], "little")
        if raw[central + 46 : central + 46 + nlen] == name.encode():
            raw[central + 24 : central + 28] = declared.to_bytes(4, "little")
            break
        central = raw.find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(raw))


def test_entry_expanding_past_its_declared_size_is_stopped(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    name = task_entry(task_id, "feedback.json")
    out = desk.root / "liar.zip"
    entries = read_entries(bundle)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for n, blob in entries.items():
            zf.writestr(n, blob if n != name else bytes(64 * 1024 * 1024))
    _lie_about_size(out, name, len(entries[name]))
    reports = []
    peak = _peak_while(lambda: reports.append(verify_bundle(out)))
    (report,) = reports
    assert any(f.startswith(name) for f in report.failures), report.failures
    assert peak < 32 * 1024 * 1024, peak


# ---------------------------------------------------------------------- names
@pytest.mark.parametrize(
    "evil", ["../outside.txt", "/etc/evidence", "tasks/../../x.json", "C:/windows/x", "a\\..\\b"]
)
def test_zip_slip_names_are_refused(case: tuple[Desk, Path, str], evil: str) -> None:
    desk, bundle, _ = case
    bad = rewrite(bundle, desk.root / "slip.zip", lambda e: e.__setitem__(evil, b"{}"))
    report = verify_bundle(bad)
    assert any(f.startswith(evil) and "unsafe name" in f for f in report.failures), report.failures
