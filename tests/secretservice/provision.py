"""Install the real Secret Service the keyring suite talks to (GNOME Keyring on a D-Bus session bus).

    python tests/secretservice/provision.py          # reuse or install, smoke-test, print JSON
    python tests/secretservice/provision.py --where  # print JSON only if everything is already there
    python tests/secretservice/provision.py --private  # ignore the system's copies (tests this path)

The machine's own ``gnome-keyring-daemon`` and ``dbus-run-session`` are used when they are on PATH.
Otherwise Debian's packages are fetched with ``apt-get download`` and unpacked with ``dpkg -x`` into
a cache outside the clone (``~/.cache/evidence-desk/secret-service`` or
``EVIDENCE_DESK_MODEL_CACHE``), one copy per architecture: no root, nothing installed into the
system, and a fresh clone on the same machine fetches nothing. Only the packages the system lacks are
fetched (GNOME Keyring's two libraries beside it; D-Bus's tools when ``dbus-run-session`` is missing).
Without apt lists (a fresh container), root updates the system's; anyone else reads the index into
private lists under the cache. Before anything is used, the daemon prints its version: an unpacked
copy missing a library is thrown away and reported, never handed to the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from the clone

from tests.realmodel.provision import cache_root  # (the same cache as the model server)

KEYRING_PACKAGES = ("gnome-keyring", "libgck-1-0", "libgcr-base-3-1")
# dbus-run-session and the daemon it starts, with the libraries a minimal Debian lacks.
DBUS_PACKAGES = (
    "dbus-bin",
    "dbus-daemon",
    "dbus-session-bus-common",
    "libdbus-1-3",
    "libexpat1",
    "libapparmor1",
)
LIB_DIR = "usr/lib/x86_64-linux-gnu" if platform.machine() == "x86_64" else "usr/lib/aarch64-linux-gnu"


def _say(message: str) -> None:
    print(f"provision: {message}", file=sys.stderr, flush=True)


def _installed(package: str) -> bool:
    found = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return "install ok installed" in found.stdout


def system_tools() -> dict[str, str] | None:
    """The machine's own daemon and session runner, when both are on PATH."""
    daemon, runner = shutil.which("gnome-keyring-daemon"), shutil.which("dbus-run-session")
    if daemon and runner:
        return {"daemon": daemon, "dbus_run_session": runner, "ld_library_path": "", "dbus_config": ""}
    return None


def _root() -> Path:
    return cache_root() / "secret-service" / f"{platform.machine()}"


def _describe(root: Path) -> dict[str, str]:
    runner = root / "usr/bin/dbus-run-session"
    config = root / "usr/share/dbus-1/session.conf"
    return {
        "daemon": str(root / "usr/bin/gnome-keyring-daemon"),
        "dbus_run_session": str(runner) if runner.exists() else shutil.which("dbus-run-session") or "",
        "dbus_daemon": str(root / "usr/bin/dbus-daemon") if runner.exists() else "",
        "dbus_config": str(config) if config.exists() else "",
        "ld_library_path": str(root / LIB_DIR),
    }


def where(private: bool = False) -> dict[str, str] | None:
    """What the suite runs, if it is already there (nothing is fetched)."""
    if not private and (found := system_tools()) is not None:
        return found
    root = _root() / ("private" if private else "extracted")
    return _describe(root) if (root / ".ready").exists() else None


def _apt(args: list[str], lists: Path | None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    options = []
    if lists is not None:  # private lists and cache: apt without root
        options = [
            "-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Cache={lists.parent / 'apt-cache'}",
            "-o", "Debug::NoLocking=1",
        ]  # fmt: skip
    return subprocess.run(
        ["apt-get", "-qq", *options, *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def _download(packages: list[str], into: Path) -> None:
    """``apt-get download`` into ``into``; without apt lists, read the index first (see the module)."""
    lists: Path | None = None
    for attempt in (1, 2):
        done = _apt(["download", *packages], lists, cwd=into)
        if done.returncode == 0:
            return
        if attempt == 2:
            raise SystemExit(
                f"provision: apt-get download {' '.join(packages)} failed: {done.stderr.strip()}"
            )
        if os.geteuid() == 0:
            _say("no package index: apt-get update")
            _apt(["update"], None)
        else:
            lists = _root() / "apt-lists"
            (lists / "partial").mkdir(parents=True, exist_ok=True)
            (lists.parent / "apt-cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
            _say(f"no package index readable without root: reading it into {lists}")
            _apt(["update"], lists)


def _smoke(found: dict[str, str]) -> str:
    env = {**os.environ, "LD_LIBRARY_PATH": found["ld_library_path"]}
    done = subprocess.run(
        [found["daemon"], "--version"], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"provision: the unpacked gnome-keyring-daemon does not start: {done.stderr.strip()}"
        )
    return done.stdout.splitlines()[0] if done.stdout else "?"


def install(private: bool = False) -> dict[str, str]:
    """Fetch and unpack what the system lacks (everything with ``private``), smoke-test, keep."""
    root = _root() / ("private" if private else "extracted")
    if (root / ".ready").exists():
        return _describe(root)
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        raise SystemExit("provision: no gnome-keyring-daemon and no apt-get/dpkg to fetch one (not Debian?)")
    wanted = list(KEYRING_PACKAGES)
    if private or not shutil.which("dbus-run-session"):
        wanted += DBUS_PACKAGES
    missing = [p for p in wanted if private or not _installed(p)]
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as scratch:
        debs, staged = Path(scratch) / "debs", Path(scratch) / "root"
        debs.mkdir()
        _say(f"fetching {' '.join(missing)} (Debian packages, unpacked into {root})")
        _download(missing, debs)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), str(staged)], check=True)
        version = _smoke(_describe(staged))
        (staged / ".ready").write_text(version + "\n", encoding="utf-8")
        shutil.rmtree(root, ignore_errors=True)
        staged.rename(root)  # only a copy that starts reaches the cache
    _say(f"{version} ready in {root}")
    return _describe(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--where", action="store_true", help="only print what is already there")
    parser.add_argument("--private", action="store_true", help="unpack every package, ignore the system's")
    args = parser.parse_args()
    found = where(args.private) if args.where else (where(args.private) or install(args.private))
    if found is None:
        return 1
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
