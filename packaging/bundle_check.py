"""Smoke test of a built bundle (``make bundle-check``): the frozen program, not the source tree.

Every step runs ``dist/evidence-desk/evidence-desk`` in a fresh temporary home with the network
made unreachable (proxies pointed at a closed local port), because the classic PyInstaller failure
is a bundle that starts but lacks a lazily loaded module or data file, and the second classic is
one that quietly downloads what it lacks. Steps: --version, the in-bundle self-test, the demo
workspace, a scripted run through litellm to ``awaiting_feedback``, an export whose manifest
carries the version, the desk offscreen for a few seconds, and the cold start to a painted window.

Usage: python packaging/bundle_check.py [--bundle DIR] [--python VENV_PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BUNDLE = ROOT / "dist" / "evidence-desk"
DESK_SECONDS = 5.0
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, every connection is refused
NETWORK_MARKERS = ("Failed to fetch remote model cost map", "fetch attempt", "openaipublic.blob")

CORPUS_DOC = """# Bundle check note

The packaging smoke test reads this note. Its one fact: the bundle check corpus says the reference
lamp in the archive room is painted teal.
"""

SMOKE_SCRIPT: dict[str, Any] = {
    "conversations": [
        {
            "model": "agent",
            "match": "reference lamp",
            "turns": [
                {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "reference lamp colour"}}]},
                {"tool_calls": [{"name": "read_document", "arguments": {"document_id": "bundle-check.md"}}]},
                {
                    "content": "The reference lamp in the archive room is painted teal (source: bundle-check.md)."
                },
            ],
        },
        {
            "model": "validator",
            "match": "reference lamp",
            "turns": [
                {
                    "content": json.dumps(
                        {
                            "goal_achievement": "The answer gives the colour the task asks for.",
                            "completeness": "Judged against every part of the task.",
                            "rule_compliance": "No analyst rules are configured.",
                            "status": "accepted",
                            "score": 0.9,
                            "issues": [],
                            "missing_requirements": [],
                            "evidence_gaps": [],
                            "recommended_revision_prompt": "",
                            "category": "none",
                            "citations": [
                                {
                                    "claim": "The reference lamp is painted teal",
                                    "evidence_id": "E2",
                                    "quote": "the reference lamp in the archive room is painted teal",
                                    "verdict": "supported",
                                }
                            ],
                        }
                    )
                }
            ],
        },
    ]
}


class CheckFailed(Exception):
    pass


def offline_env(home: Path) -> dict[str, str]:
    """The caller's environment with the network cut and every per-user folder in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    env.update(
        {
            "HTTP_PROXY": DEAD_PROXY,
            "HTTPS_PROXY": DEAD_PROXY,
            "ALL_PROXY": DEAD_PROXY,
            "http_proxy": DEAD_PROXY,
            "https_proxy": DEAD_PROXY,
            "NO_PROXY": "",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "QT_QPA_PLATFORM": "offscreen",
        }
    )
    for key in ("LITELLM_LOCAL_MODEL_COST_MAP", "TIKTOKEN_CACHE_DIR", "EVIDENCE_DESK_RESOURCES"):
        env.pop(key, None)  # the bundle must bring these itself
    return env


def run(
    exe: Path,
    args: list[str],
    env: dict[str, str],
    *,
    timeout: float = 180,
    extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    proc = subprocess.run(
        [str(exe), *args],
        env={**env, **(extra or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    took = time.monotonic() - started
    print(f"  $ evidence-desk {' '.join(args)}  -> rc={proc.returncode} in {took:.1f} s", flush=True)
    if any(marker in proc.stderr for marker in NETWORK_MARKERS):
        raise CheckFailed(f"tried the network:\n{proc.stderr[-2000:]}")
    if "Traceback" in proc.stderr:
        raise CheckFailed(f"traceback on stderr:\n{proc.stderr[-4000:]}")
    return proc


def expect_ok(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        raise CheckFailed(
            f"{what} exited {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}"
        )


def project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def check_version(exe: Path, env: dict[str, str]) -> str:
    proc = run(exe, ["--version"], env, timeout=60)
    expect_ok(proc, "--version")
    want = f"evidence-desk {project_version()}"
    if proc.stdout.strip() != want:
        raise CheckFailed(f"--version printed {proc.stdout.strip()!r}, expected {want!r}")
    return proc.stdout.strip()


def check_selftest(exe: Path, env: dict[str, str]) -> dict[str, Any]:
    proc = run(exe, [], env, timeout=120, extra={"EVIDENCE_DESK_BUNDLE_SELFTEST": "1"})
    try:
        report: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise CheckFailed(
            f"self-test printed no report:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        ) from None
    if proc.returncode != 0 or report["failed"] or not report["frozen"]:
        raise CheckFailed(f"self-test failed: {json.dumps(report, indent=1)[:6000]}")
    return report


def check_demo(exe: Path, env: dict[str, str], db: Path) -> None:
    proc = run(exe, ["demo", "--db", str(db)], env)
    expect_ok(proc, "demo")
    listed = run(exe, ["list", "--db", str(db), "--json"], env)
    expect_ok(listed, "list")
    tasks = json.loads(listed.stdout)
    if len(tasks) < 5:
        raise CheckFailed(f"the demo workspace has only {len(tasks)} task(s)")


def check_scripted_run(exe: Path, env: dict[str, str], work: Path) -> str:
    corpus = work / "corpus"
    corpus.mkdir()
    (corpus / "bundle-check.md").write_text(CORPUS_DOC, encoding="utf-8")
    script = work / "script.json"
    script.write_text(json.dumps(SMOKE_SCRIPT, indent=1), encoding="utf-8")
    db = work / "run.db"
    args = ["run", "What colour is the reference lamp in the archive room?", "--db", str(db), "--create"]
    proc = run(exe, [*args, "--script", str(script), "--corpus", str(corpus), "--json"], env)
    expect_ok(proc, "run")
    task = json.loads(proc.stdout)
    if task["status"] != "awaiting_feedback" or task["validation_outcome"] != "accepted":
        raise CheckFailed(f"scripted run ended {task['status']}/{task['validation_outcome']}:\n{proc.stdout}")
    out = work / "case.zip"
    exported = run(exe, ["export", task["id"], "-o", str(out), "--db", str(db)], env)
    expect_ok(exported, "export")
    with zipfile.ZipFile(out) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    if manifest["app_version"] != project_version():
        raise CheckFailed(f"the export manifest says app_version={manifest['app_version']!r}")
    return str(task["id"])


def check_desk(exe: Path, env: dict[str, str], db: Path) -> None:
    """The desk on the demo workspace, offscreen: alive after a few seconds and quiet on stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([str(exe), "--db", str(db)], env=env, stdout=out, stderr=err, text=True)
        try:
            time.sleep(DESK_SECONDS)
            alive = proc.poll() is None
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        err.seek(0)
        stderr = err.read()
    print(f"  $ evidence-desk --db {db.name}  (offscreen, {DESK_SECONDS:.0f} s) -> alive={alive}", flush=True)
    problems = [line for line in stderr.splitlines() if "Traceback" in line or "Error" in line]
    if not alive or problems:
        raise CheckFailed(f"the desk {'exited early' if not alive else 'logged errors'}:\n{stderr[-4000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE, help="the one-folder build")
    parser.add_argument("--python", help="also time the venv's start with this interpreter")
    args = parser.parse_args(argv)
    exe = args.bundle / "evidence-desk"
    if not exe.is_file():
        print(f"bundle-check: no bundle at {exe}; run `make bundle` first", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="evidence-desk-check-") as tmp:
        work = Path(tmp)
        env = offline_env(work / "home")
        steps = [
            ("version", lambda: check_version(exe, env)),
            ("self-test", lambda: check_selftest(exe, env)["version"]),
            ("demo workspace", lambda: check_demo(exe, env, work / "demo.sqlite3")),
            ("scripted run", lambda: check_scripted_run(exe, env, work)),
            ("desk offscreen", lambda: check_desk(exe, env, work / "demo.sqlite3")),
        ]
        for name, step in steps:
            print(f"[{name}]", flush=True)
            try:
                result = step()
            except (CheckFailed, subprocess.TimeoutExpired, KeyError, json.JSONDecodeError) as exc:
                print(f"bundle-check: {name} FAILED: {exc}", file=sys.stderr)
                return 1
            if result:
                print(f"  ok: {result}", flush=True)
        print("[cold start]", flush=True)
        from measure_start import measure

        bundle_times = measure([str(exe)], env, work / "demo.sqlite3")
        print(f"  bundle: {bundle_times}", flush=True)
        if args.python:
            venv_times = measure(
                [args.python, str(ROOT / "packaging" / "launcher.py")], env, work / "demo.sqlite3"
            )
            print(f"  venv:   {venv_times}", flush=True)
    print(f"bundle-check: all steps passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
