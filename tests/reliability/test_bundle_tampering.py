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


# ---------------------------------------------------------------------- every entry, every way
def _flip_in_compressed_data(src: Path, out: Path, name: str) -> Path:
    raw = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        info = zf.getinfo(name)
    extra = int.from_bytes(raw[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + len(info.filename.encode()) + extra
    raw[start + info.compress_size // 2] ^= 0x01
    out.write_bytes(bytes(raw))
    return out


def _flip_in_content(blob: bytes) -> bytes:
    """One bit of the middle byte, kept printable so JSON stays parseable where it can."""
    i = len(blob) // 2
    while i < len(blob) and blob[i : i + 1] in b'"\\{}[]:,\n':
        i += 1
    i = min(i, len(blob) - 1)
    return blob[:i] + bytes([blob[i] ^ 0x01]) + blob[i + 1 :]


def test_every_entry_tampered_every_way_is_caught(case: tuple[Desk, Path, str]) -> None:
    """A bit flipped in each entry's compressed bytes, in its content (with and without the manifest
    recomputed), and each entry deleted: none of these may verify."""
    desk, bundle, _ = case
    names = list(read_entries(bundle))
    assert MANIFEST_NAME in names and "signature.json" in names
    tried: list[str] = []
    passed: list[str] = []

    def attempt(label: str, path: Path) -> None:
        tried.append(label)
        if verify_bundle(path).ok:
            passed.append(label)

    for i, name in enumerate(names):
        attempt(f"compressed flip {name}", _flip_in_compressed_data(bundle, desk.root / f"c{i}.zip", name))
        for recompute in (False, True):

            def change(e: Entries, name: str = name, recompute: bool = recompute) -> None:
                e[name] = _flip_in_content(e[name])
                if recompute and name != MANIFEST_NAME:
                    recompute_manifest(e)

            attempt(
                f"content flip {name} (manifest recomputed: {recompute})",
                rewrite(bundle, desk.root / f"f{i}.zip", change),
            )
        if name != "signature.json":  # removing the signature makes it unsigned: see the signature tests
            attempt(f"delete {name}", rewrite(bundle, desk.root / f"d{i}.zip", lambda e, n=name: e.pop(n)))
    assert len(tried) >= 4 * len(names) - 1
    assert passed == []


def test_swapped_reordered_and_duplicated_content_is_caught(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    entries = read_entries(bundle)
    logs = sorted(n for n in entries if n.endswith("events.jsonl"))
    main = max(logs, key=lambda n: len(entries[n]))
    attacks: dict[str, Callable[[Entries], None]] = {}

    def swap_lines(e: Entries) -> None:
        lines = e[main].splitlines(keepends=True)
        lines[1], lines[-2] = lines[-2], lines[1]
        e[main] = b"".join(lines)
        recompute_manifest(e)

    def reverse_lines(e: Entries) -> None:
        e[main] = b"".join(reversed(e[main].splitlines(keepends=True)))
        recompute_manifest(e)

    def drop_middle_line(e: Entries) -> None:
        lines = e[main].splitlines(keepends=True)
        del lines[len(lines) // 2]
        e[main] = b"".join(lines)
        recompute_manifest(e)

    def swap_task_files(e: Entries) -> None:
        a, b = task_entry(task_id, "attempts.json"), task_entry(task_id, "feedback.json")
        e[a], e[b] = e[b], e[a]
        recompute_manifest(e)

    def forged_manifest_chain_head(e: Entries) -> None:
        manifest = json.loads(e[MANIFEST_NAME])
        sid = next(iter(manifest["chains"]))
        manifest["chains"][sid]["head"] = "0" * 64
        e[MANIFEST_NAME] = (canonical(manifest) + "\n").encode()

    def forged_manifest_drops_task_file(e: Entries) -> None:
        manifest = json.loads(e[MANIFEST_NAME])
        manifest["entries"].pop(task_entry(task_id, "validations.json"))
        e.pop(task_entry(task_id, "validations.json"))
        e[MANIFEST_NAME] = (canonical(manifest) + "\n").encode()

    attacks = {
        "swap two events": swap_lines,
        "reverse the log": reverse_lines,
        "drop an event": drop_middle_line,
        "swap task files": swap_task_files,
        "forged chain head": forged_manifest_chain_head,
        "forged manifest without a task file": forged_manifest_drops_task_file,
        "forged task.json (F12)": forge_task_json(task_id),
    }
    clean = [
        label
        for label, change in attacks.items()
        if verify_bundle(rewrite(bundle, desk.root / "x.zip", change)).ok
    ]
    assert clean == []

    # The same entries in another order in the archive are the same bundle.
    shuffled = dict(reversed(list(entries.items())))
    assert verify_bundle(write_entries(desk.root / "shuffled.zip", shuffled)).ok

    # A second copy of an entry (an appended, altered duplicate) is named.
    dup = desk.root / "dup.zip"
    write_entries(dup, entries)
    with zipfile.ZipFile(dup, "a") as zf, pytest.warns(UserWarning):
        zf.writestr(main, entries[main].replace(b"answer", b"ANSWER"))
    report = verify_bundle(dup)
    assert any(f.startswith(main) and "appears 2 times" in f for f in report.failures), report.failures


# ---------------------------------------------------------------------- signatures
def _verify_line(desk: Desk, path: Path, *extra: str) -> tuple[int, str]:
    code, out, err = desk.cli("verify", str(path), *extra)
    return code, out + err


def test_signed_by_own_workspace_is_known_elsewhere_unknown_until_trusted(
    case: tuple[Desk, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    desk, bundle, _ = case
    code, text = _verify_line(desk, bundle)
    assert code == 0 and "signed by a known key (fingerprint " in text
    fingerprint = text.split("(fingerprint ")[1].split(")")[0]
    assert len(fingerprint) == 64

    other = desk.root / "other.sqlite3"
    code, text = _verify_line(desk, bundle, "--db", str(other))
    assert code == 0 and f"signed by an unknown key (fingerprint {fingerprint})" in text
    code, _, err = desk.cli("import", str(bundle), "--db", str(other))
    assert code == 4 and "signed by an unknown key" in err and "--trust" in err
    code, out, _ = desk.cli("list", "--db", str(other), "--json")
    assert json.loads(out) == []

    config = desk.root / "config" / "config.toml"
    config.parent.mkdir()
    (config.parent / "trusted-keys.txt").write_text(f"{fingerprint}  # Ana's workspace\n", encoding="utf-8")
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(config))
    code, text = _verify_line(desk, bundle, "--db", str(other))
    assert "signed by a known key" in text
    code, out, err = desk.cli("import", str(bundle), "--db", str(other))
    assert code == 0, err
    assert f"bundle known by {fingerprint}" in out


def test_unknown_signer_imports_only_with_trust(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    other = desk.root / "other.sqlite3"
    code, out, err = desk.cli("import", str(bundle), "--db", str(other), "--trust")
    assert code == 0, err
    code, out, _ = desk.cli("list", "--db", str(other), "--json")
    assert [t["id"] for t in json.loads(out)] == [task_id]


def test_unsigned_bundle_says_so_and_needs_trust(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, _ = case
    stripped = rewrite(bundle, desk.root / "unsigned.zip", lambda e: e.pop("signature.json"))
    code, text = _verify_line(desk, stripped)
    assert code == 0 and "signature: unsigned" in text
    code, _, err = desk.cli("import", str(stripped), "--db", str(desk.root / "o.sqlite3"))
    assert code == 4 and "unsigned" in err


def test_signature_over_a_modified_bundle_fails(case: tuple[Desk, Path, str]) -> None:
    desk, bundle, task_id = case
    name = task_entry(task_id, "feedback.json")

    def change(e: Entries) -> None:
        e[name] = b"[]\n\n"
        recompute_manifest(e)

    report = verify_bundle(rewrite(bundle, desk.root / "resigned.zip", change))
    assert not report.ok and report.signature.status == "invalid"
    assert any(f.startswith("signature.json: signature does not match") for f in report.failures)


def test_full_forgery_re_signed_by_another_key_is_unknown(case: tuple[Desk, Path, str]) -> None:
    """The forger who rebuilds everything and signs with a key of their own is not a known signer."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from core.bundle.signing import signature_entry

    desk, bundle, task_id = case
    entries = read_entries(bundle)
    forge_task_json(task_id)(entries)
    entries["signature.json"] = signature_entry(Ed25519PrivateKey.generate(), entries[MANIFEST_NAME])
    forged = write_entries(desk.root / "forged.zip", entries)
    report = verify_bundle(forged, known_keys={"0" * 64})
    assert report.signature.status == "unknown"
    code, _, err = desk.cli("import", str(forged), "--db", str(desk.root / "o.sqlite3"))
    assert code == 4 and "refusing to import" in err
