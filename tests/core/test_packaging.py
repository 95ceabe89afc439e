"""The PyInstaller spec and desktop files stay in step with the code, without building anything.

A bundle build takes minutes (``make bundle-check`` runs it); these checks catch the usual ways a
spec rots in milliseconds: a data file litellm needs falling under an exclude pattern, an excluded
litellm module that the completion path imports, migrations not shipped where the store looks, a
desktop entry whose icon or program name no longer matches.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import importlib.util
import os
import re
import runpy
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "evidence-desk.spec"
DESKTOP_FILE = PACKAGING / "evidence-desk.desktop"
ICONS = ROOT / "resources" / "icons"

# litellm modules the scripted completion path really imports (measured with sys.modules after a
# demo build); excluding any of them gives a bundle that starts and fails on its first model call.
LITELLM_RUNTIME_MODULES = [
    "litellm.main",
    "litellm.utils",
    "litellm.llms.custom_llm",
    "litellm.litellm_core_utils.default_encoding",
    "litellm.litellm_core_utils.token_counter",
    "litellm.proxy._types",
    "litellm.proxy.common_utils.encrypt_decrypt_utils",
    "litellm.proxy._experimental.mcp_server.utils",
    "litellm.proxy.pass_through_endpoints.llm_provider_handlers.typesafe_passthrough_logging_handler",
    "litellm.proxy.spend_tracking.cold_storage_handler",
    "litellm.experimental_mcp_client.tools",
]
# Data files litellm opens at run time (audit-hook trace of the same run), relative to litellm/.
LITELLM_RUNTIME_DATA = [
    "model_prices_and_context_window_backup.json",
    "litellm_core_utils/tokenizers/anthropic_tokenizer.json",
    "litellm_core_utils/tokenizers/9b5ad71b2ce5302211f9c61530b329a4922fc6a4",  # cl100k_base
    "litellm_core_utils/tokenizers/fb374d419588a4632f3f557e76b4b70aebbca790",  # o200k_base
    "llms/openai_like/providers.json",
    "containers/endpoints.json",
]


def _spec_tree() -> ast.Module:
    return ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))


def _assigned(name: str) -> Any:
    for node in ast.walk(_spec_tree()):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned in {SPEC.name}")


def _calls(func: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(_spec_tree())
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == func
    ]


def _string_constants() -> set[str]:
    return {
        n.value for n in ast.walk(_spec_tree()) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def _litellm_dir() -> Path:
    spec = importlib.util.find_spec("litellm")  # locates without importing (litellm takes seconds)
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


def _pyinstaller_excluded(relative: str, patterns: list[str]) -> bool:
    """Over-approximates PyInstaller's glob excludes (fnmatch's ``*`` also crosses ``/``): safe for "kept"."""
    return any(
        fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(relative, p.replace("**/", "")) for p in patterns
    )


def test_spec_collects_what_the_code_loads_lazily() -> None:
    strings = _string_constants()
    for needed in (
        "tiktoken_ext.openai_public",  # tiktoken finds encodings through this namespace plugin
        "sqlalchemy.dialects.sqlite.aiosqlite",
        "alembic.op",
        "alembic.context",
        "PySide6.QtSvg",  # brings the SVG icon engine and image plugins
        "qasync",
        "bundle_selftest",
    ):
        assert needed in strings, f"{needed} missing from the spec's hidden imports"
    collected = {ast.literal_eval(c.args[0]) for c in _calls("collect_submodules")}
    assert {"litellm", "core", "desktop", "mcp", "alembic.ddl"} <= collected
    data_packages = {ast.literal_eval(c.args[0]) for c in _calls("collect_data_files")}
    assert {"litellm", "tiktoken_ext"} <= data_packages
    metadata_calls = _calls("copy_metadata")
    assert metadata_calls and any(k.arg == "recursive" for k in metadata_calls[0].keywords)
    assert _assigned("APP") == "evidence-desk"  # copy_metadata(APP): --version reads it in the bundle


def test_litellm_exclusions_spare_the_runtime_path_and_still_exist() -> None:
    prefixes = _assigned("LITELLM_EXCLUDED_PREFIXES")
    for module in LITELLM_RUNTIME_MODULES:
        assert not module.startswith(tuple(prefixes)), f"{module} is excluded but imported at run time"
    root = _litellm_dir()
    for prefix in prefixes:
        rel = Path(*prefix.split(".")[1:])
        assert (root / rel).is_dir() or (root / rel).with_suffix(".py").is_file(), f"stale exclusion {prefix}"


def test_litellm_data_excludes_keep_the_files_it_opens() -> None:
    (call,) = [c for c in _calls("collect_data_files") if ast.literal_eval(c.args[0]) == "litellm"]
    excludes = next(ast.literal_eval(k.value) for k in call.keywords if k.arg == "excludes")
    root = _litellm_dir()
    for relative in LITELLM_RUNTIME_DATA:
        assert (root / relative).is_file(), (
            f"litellm no longer ships {relative}: update the spec and this list"
        )
        assert not _pyinstaller_excluded(relative, excludes), f"{relative} falls under {excludes}"
    assert _pyinstaller_excluded("proxy/_experimental/out/index.html", excludes)  # the exclusion works


def test_migrations_ship_where_the_store_looks() -> None:
    from core.store import store

    migrations = Path(store.MIGRATIONS_DIR).resolve()
    # The spec copies core/store/migrations/** to the same relative path under _MEIPASS, which is
    # where MIGRATIONS_DIR (next to store.py) points in the bundle.
    assert migrations == (ROOT / "core" / "store" / "migrations").resolve()
    assert (migrations / "env.py").is_file() and list((migrations / "versions").glob("*.py"))
    assert 'ROOT / "core" / "store" / "migrations"' in SPEC.read_text(encoding="utf-8")


def test_runtime_hook_sets_the_local_cost_map(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = PACKAGING / "rthooks" / "pyi_rth_evidence_desk.py"
    assert '"rthooks" / "pyi_rth_evidence_desk.py"' in SPEC.read_text(encoding="utf-8")
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    runpy.run_path(str(hook))
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")  # a user's explicit choice wins
    runpy.run_path(str(hook))
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "False"


def test_desktop_entry_is_valid_and_matches_the_bundle() -> None:
    text = DESKTOP_FILE.read_text(encoding="utf-8")
    assert text.startswith("[Desktop Entry]\n") and text.endswith("\n")
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(text)
    assert parser.sections() == ["Desktop Entry"]
    entry = dict(parser["Desktop Entry"])
    known = {
        "Type", "Version", "Name", "GenericName", "Comment", "Exec", "TryExec", "Icon", "Terminal",
        "Categories", "Keywords", "StartupNotify", "StartupWMClass", "MimeType",
    }  # fmt: skip
    assert set(entry) <= known, f"unknown keys: {set(entry) - known}"
    assert entry["Type"] == "Application" and entry["Version"] in ("1.0", "1.1", "1.2", "1.3", "1.4")
    assert entry["Exec"].split()[0] == _assigned("APP") == entry["TryExec"]
    assert entry["Terminal"] in ("true", "false") and entry["StartupNotify"] in ("true", "false")
    for key in ("Categories", "Keywords"):
        assert entry[key].endswith(";"), f"{key} must end with ';'"
    main = {
        "AudioVideo",
        "Audio",
        "Video",
        "Development",
        "Education",
        "Game",
        "Graphics",
        "Network",
        "Office",
        "Science",
        "Settings",
        "System",
        "Utility",
    }
    assert len(main & set(entry["Categories"].split(";"))) == 1, (
        "exactly one main category (else listed twice)"
    )
    assert (ICONS / f"{entry['Icon']}.svg").is_file() and (ICONS / f"{entry['Icon']}.png").is_file()


def test_app_icons_are_well_formed() -> None:
    root = ET.parse(ICONS / "evidence-desk.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox") == "0 0 256 256"
    png = (ICONS / "evidence-desk.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (256, 256)  # the hicolor/256x256 size the installer uses


def test_install_script_points_the_entry_at_the_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "my bundle" / "evidence-desk"
    (bundle / "share").mkdir(parents=True)
    exe = bundle / "evidence-desk"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    for source in (DESKTOP_FILE, ICONS / "evidence-desk.svg", ICONS / "evidence-desk.png"):
        (bundle / "share" / source.name).write_bytes(source.read_bytes())
    data = tmp_path / "data"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "XDG_DATA_HOME": str(data)}
    script = PACKAGING / "install-desktop-entry.sh"
    subprocess.run(["sh", str(script), str(bundle)], env=env, check=True, capture_output=True)
    installed = (data / "applications" / "evidence-desk.desktop").read_text(encoding="utf-8")
    assert f'Exec="{exe}"' in installed and f"TryExec={exe}" in installed
    assert (data / "icons" / "hicolor" / "scalable" / "apps" / "evidence-desk.svg").is_file()
    subprocess.run(["sh", str(script), "--uninstall"], env=env, check=True, capture_output=True)
    assert not (data / "applications" / "evidence-desk.desktop").exists()
    missing = subprocess.run(["sh", str(script), str(tmp_path)], env=env, capture_output=True, text=True)
    assert missing.returncode == 1 and "no executable" in missing.stderr


def test_shell_scripts_parse() -> None:
    for script in ("build.sh", "install-desktop-entry.sh"):
        subprocess.run(["bash", "-n", str(PACKAGING / script)], check=True)


def test_selftest_checks_pass_from_the_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle's self-test functions themselves work (the cheap ones; litellm's are for the bundle)."""
    monkeypatch.syspath_prepend(str(PACKAGING))
    selftest = __import__("bundle_selftest")
    assert {"version", "litellm", "tiktoken", "mcp", "migrations", "qt"} <= set(selftest.CHECKS)
    assert selftest.CHECKS["migrations"]()["migrations"]
    assert selftest.CHECKS["resources"]()["resources"].endswith("resources")
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    with pytest.raises(AssertionError, match="runtime hook"):
        selftest.CHECKS["litellm"]()
    sys.modules.pop("bundle_selftest", None)


def _qt_libs(kind: str) -> dict[str, str]:
    """The library each listed Debian package provides, from packaging/qt-runtime-libs.txt."""
    found: dict[str, str] = {}
    for line in (ROOT / "packaging" / "qt-runtime-libs.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#") and parts[0] == kind:
            found[parts[2]] = parts[1]
    return found


def test_the_xcb_library_list_covers_what_the_xcb_plugin_links() -> None:
    """`make run` installs these; a PySide6 that needs one more library must fail here first."""
    import PySide6

    qt = Path(PySide6.__file__).parent / "Qt"
    plugin = qt / "plugins" / "platforms" / "libqxcb.so"
    if not plugin.exists() or shutil.which("ldd") is None:
        pytest.skip("no xcb plugin or no ldd on this platform")
    needed: set[str] = set()
    for binary in [plugin, *sorted((qt / "lib").glob("libQt6XcbQpa.so*"))[:1]]:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False).stdout
        needed |= {line.split()[0] for line in out.splitlines() if line.strip()}
    system = {lib for lib in needed if re.match(r"lib(xcb|X11|xkbcommon)", lib)}
    listed = set(_qt_libs("xcb")) | set(_qt_libs("offscreen"))
    assert system, "ldd named no X libraries: the check would prove nothing"
    assert system <= listed, f"add to packaging/qt-runtime-libs.txt: {sorted(system - listed)}"
