"""The bad-input table: each case builds its own hostile files and names the exit code it expects.

A case is data, not code paths: ``files`` maps a file name to bytes (or a special kind), ``argv``
and ``env`` may name those files as ``{name}``, and ``{db}`` is the case's copy of the seeded
workspace. Whatever the case, the command must answer with exactly one line on stderr, no
traceback, the expected exit code, and leave every row of the workspace as it was.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from io import BytesIO
from typing import Literal

from core.inputs import MAX_INPUT_BYTES

# Special file kinds a case can ask for instead of bytes.
Special = Literal["fifo", "dir", "huge", "symlink-to-fifo"]

AMBIGUOUS = "abcdef"  # the seed holds two tasks whose ids start with this
TASK_A = "abcdef01" + "0" * 24
TASK_B = "abcdef02" + "0" * 24


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    code: int
    files: dict[str, bytes | Special] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    subprocess: bool = False  # crash-prone: run the real program in its own process
    says: str = ""  # a phrase the one line must contain


SCRIPT = json.dumps({"conversations": [{"model": "agent", "turns": [{"content": "x"}]}]}).encode()


def _nested_json(depth: int, shape: str) -> bytes:
    if shape == "array":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def _nested_toml(depth: int, shape: str) -> bytes:
    if shape == "array":
        return b"nodes = " + b"[" * depth + b"]" * depth + b"\n"
    if shape == "inline":
        return b"nodes = " + b"{a = " * depth + b"1" + b"}" * depth + b"\n"
    return b"[" + b".".join([b"t"] * depth) + b"]\nx = 1\n"


def _bundle(manifest: bytes) -> bytes:
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("manifest.json", manifest)
    return buf.getvalue()


# How each kind of user file reaches the program: (argv, env, file name).
def _run_with(kind: str, name: str) -> tuple[tuple[str, ...], dict[str, str]]:
    base = ("run", "a task", "--db", "{db}", "--script", "{script.json}")
    if kind == "script":
        return ("run", "a task", "--db", "{db}", "--script", f"{{{name}}}"), {}
    if kind == "schema":
        return (*base, "--output-schema", f"{{{name}}}"), {}
    if kind in ("team-json", "team-toml"):
        return (*base, "--team", f"{{{name}}}"), {}
    if kind == "config":
        return ("list", "--db", "{db}"), {"EVIDENCE_DESK_CONFIG_FILE": f"{{{name}}}"}
    if kind == "rules":
        return ("list", "--db", "{db}"), {"EVIDENCE_DESK_RULES": f"{{{name}}}"}
    if kind == "bundle":
        return ("import", f"{{{name}}}", "--db", "{db}"), {}
    raise AssertionError(kind)


_SUFFIX = {
    "script": ".json",
    "schema": ".json",
    "team-json": ".json",
    "team-toml": ".toml",
    "config": ".toml",
    "rules": ".txt",
    "bundle": ".zip",
}
JSON_KINDS = ("script", "schema", "team-json", "bundle")
TOML_KINDS = ("team-toml", "config")
ALL_KINDS = ("script", "schema", "team-json", "team-toml", "config", "rules")


def _file_case(
    kind: str, label: str, content: bytes | Special, *, code: int = 4, says: str = "", sub: bool = False
) -> Case:
    name = f"input{_SUFFIX[kind]}"
    if kind == "bundle" and isinstance(content, bytes):
        content = _bundle(content)
    argv, env = _run_with(kind, name)
    files: dict[str, bytes | Special] = {"script.json": SCRIPT, name: content}
    return Case(f"{kind}-{label}", argv, code, files, env, subprocess=sub, says=says)


def nesting_cases() -> list[Case]:
    cases = []
    for kind in JSON_KINDS:
        for depth in (101, 1_000, 10_000, 200_000):
            for shape in ("array", "object"):
                cases.append(
                    _file_case(
                        kind,
                        f"json-{shape}-depth-{depth}",
                        _nested_json(depth, shape),
                        says="nested",
                        sub=depth == 200_000 and shape == "array",
                    )
                )
    for kind in TOML_KINDS:
        for depth in (101, 1_000, 100_000):
            for shape in ("array", "inline", "table"):
                cases.append(
                    _file_case(
                        kind,
                        f"toml-{shape}-depth-{depth}",
                        _nested_toml(depth, shape),
                        sub=depth == 100_000 and shape == "array",
                    )
                )
    return cases


def encoding_and_size_cases() -> list[Case]:
    bad: dict[str, bytes] = {
        "0xff-first": b"\xff\xfe\x00garbage",
        "invalid-middle": b'{"a": "caf\xe9"}',
        "utf16-bom": '{"a": 1}'.encode("utf-16"),
        "nul-bytes": b"\x00" * 64,
    }
    cases = []
    for kind in ALL_KINDS:
        for label, content in bad.items():
            if label == "nul-bytes" and kind == "rules":
                continue  # NULs are valid UTF-8; a rules file is free text
            cases.append(_file_case(kind, label, content, sub=label == "0xff-first" and kind == "schema"))
        cases.append(_file_case(kind, "over-the-cap", "huge", says="too large"))
        sub = kind in ("schema", "config")
        cases.append(_file_case(kind, "fifo", "fifo", sub=sub))
        cases.append(_file_case(kind, "folder", "dir"))
    for kind in ("script", "schema", "team-json"):
        cases.append(_file_case(kind, "empty", b""))
        cases.append(_file_case(kind, "truncated", b'{"a": [1, 2'))
        cases.append(_file_case(kind, "trailing-garbage", b'{"a": 1} and more'))
        cases.append(_file_case(kind, "huge-integer", b"9" * 5000))
    cases.append(_file_case("team-toml", "empty", b""))
    cases.append(_file_case("team-toml", "bad-syntax", b"mode = = 'x'"))
    cases.append(_file_case("config", "bad-syntax", b"agent_model = [unclosed"))
    cases.append(_file_case("bundle", "not-a-zip", "huge"))
    cases.append(_file_case("bundle", "binary-manifest", b"\xff\xfe\x00"))
    for kind in ("script", "schema", "team-json"):
        argv, env = _run_with(kind, "absent.json")
        cases.append(Case(f"{kind}-missing", argv, 4, {"script.json": SCRIPT}, env))
    argv, env = _run_with("rules", "absent.txt")
    cases.append(Case("rules-missing", argv, 4, {}, env))
    return cases


def schema_cases() -> list[Case]:
    schemas: dict[str, object] = {
        "dangling-pointer": {"properties": {"a": {"$ref": "#/definitions/nope"}}},
        "dangling-defs": {"$defs": {"x": {"$ref": "#/$defs/missing"}}},
        "dangling-anchor": {"properties": {"a": {"$ref": "#no-such-anchor"}}},
        "remote-http": {"properties": {"a": {"$ref": "http://127.0.0.1:9/x.json"}}},
        "remote-https": {"properties": {"a": {"$ref": "https://example.invalid/s.json#/x"}}},
        "remote-file": {"properties": {"a": {"$ref": "file:///etc/passwd"}}},
        "relative-file": {"items": {"$ref": "sibling.json"}},
        "self-loop": {"$ref": "#"},
        "mutual-loop": {
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
            "$ref": "#/$defs/a",
        },
        "bad-type": {"type": 3},
        "bad-required": {"required": "a"},
        "a-list": [1, 2],
        "a-string": "schema",
    }
    cases = []
    for label, schema in schemas.items():
        sub = label in ("remote-http", "self-loop")
        cases.append(_file_case("schema", label, json.dumps(schema).encode(), sub=sub))
    return cases


def task_id_cases() -> list[Case]:
    ids = {
        "percent": "%",
        "six-percents": "%%%%%%",
        "underscores": "______",
        "prefix-percent": "abcdef%",
        "prefix-underscore": "abcde_",
        "backslash": "abcdef\\",
        "too-short": "abc",
        "three-hex": "7ff",
        "non-hex": "zzzzzzzz",
        "punctuation": "abcdef!",
        "ambiguous": AMBIGUOUS,
        "unknown-hex": "0123456789",
        "empty": "",
        "unicode": "abcdéf",
        "sql-quote": "abcdef' or '1'='1",
    }
    cases = []
    for label, typed in ids.items():
        cases.append(Case(f"show-{label}", ("show", typed, "--db", "{db}"), 4))
        cases.append(Case(f"abandon-{label}", ("feedback", typed, "abandon", "--db", "{db}"), 4))
        cases.append(Case(f"report-{label}", ("report", typed, "-o", "{out}/r.html", "--db", "{db}"), 4))
    cases.append(
        Case(
            "satisfied-like-pattern", ("feedback", "abcdef%", "satisfied", "--db", "{db}"), 4, subprocess=True
        )
    )
    cases.append(Case("export-percent", ("export", "%%%%%%", "-o", "{out}/b.zip", "--db", "{db}"), 4))
    return cases


def database_cases() -> list[Case]:
    cases = [
        Case("db-is-a-folder", ("list", "--db", "{folder}"), 4, {"folder": "dir"}),
        Case(
            "db-under-a-file", ("list", "--db", "{afile}/sub/ws.sqlite3"), 4, {"afile": b"x"}, subprocess=True
        ),
        Case("db-under-a-file-url", ("list", "--db", "sqlite:///{afile}/ws.sqlite3"), 4, {"afile": b"x"}),
        Case("db-text-file", ("list", "--db", "{notes.txt}"), 4, {"notes.txt": b"just some notes\n"}),
        Case("db-truncated-header", ("list", "--db", "{half.db}"), 4, {"half.db": b"SQLite for"}),
        Case("db-is-a-fifo", ("list", "--db", "{pipe.db}"), 4, {"pipe.db": "fifo"}),
        Case(
            "db-corrupt-run",
            ("run", "secret words", "--db", "{corrupt}", "--script", "{script.json}"),
            4,
            {"script.json": SCRIPT},
            subprocess=True,
            says="corrupt",
        ),
        Case("db-corrupt-list", ("list", "--db", "{corrupt}"), 4, subprocess=True, says="corrupt"),
        Case(
            "db-corrupt-abandon", ("feedback", TASK_A[:8], "abandon", "--db", "{corrupt}"), 4, says="corrupt"
        ),
        Case(
            "db-read-only-run",
            ("run", "secret words", "--db", "{readonly}", "--script", "{script.json}"),
            4,
            {"script.json": SCRIPT},
            subprocess=True,
            says="read-only",
        ),
        Case(
            "db-read-only-abandon",
            ("feedback", TASK_A[:8], "abandon", "--db", "{readonly}"),
            4,
            says="read-only",
        ),
        Case("url-unknown-dialect", ("list", "--db", "mysql://u@127.0.0.1/x"), 4),
        Case("url-garbage", ("list", "--db", "postgresql://u@[::1/x"), 4),
        Case("url-refused-port", ("list", "--db", "postgresql://u@127.0.0.1:1/x"), 4, subprocess=True),
        Case("url-unknown-option", ("list", "--db", "postgresql://u@127.0.0.1:1/x?frobnicate=1"), 4),
        Case("url-bad-sslmode", ("list", "--db", "postgresql://u@127.0.0.1:1/x?sslmode=sometimes"), 4),
        Case("url-bad-timeout", ("list", "--db", "postgresql://u@127.0.0.1:1/x?connect_timeout=soon"), 4),
        Case("url-sslrootcert", ("list", "--db", "postgresql://u@127.0.0.1:1/x?sslrootcert=/tmp/ca"), 4),
    ]
    return cases


def flag_cases() -> list[Case]:
    return [
        Case("no-such-command", ("frobnicate",), 2),
        Case("run-without-text", ("run", "--db", "{db}"), 2),
        Case("list-bad-status", ("list", "--status", "bogus", "--db", "{db}"), 2),
        Case("feedback-bad-action", ("feedback", TASK_A[:8], "bogus", "--db", "{db}"), 2),
        Case(
            "feedback-version-not-int",
            ("feedback", TASK_A[:8], "abandon", "--version", "x", "--db", "{db}"),
            2,
        ),
        Case("revise-without-prompt", ("feedback", TASK_A[:8], "revise", "--db", "{db}"), 2),
        Case("list-unknown-flag", ("list", "--nope", "--db", "{db}"), 2, subprocess=True),
        Case("export-without-output", ("export", TASK_A[:8], "--db", "{db}"), 2),
        Case(
            "run-blank-text",
            ("run", "   ", "--db", "{db}", "--script", "{script.json}"),
            4,
            {"script.json": SCRIPT},
        ),
        Case("stale-version", ("feedback", TASK_A[:8], "abandon", "--version", "99", "--db", "{db}"), 3),
        Case(
            "bad-env-number", ("list", "--db", "{db}"), 4, env={"EVIDENCE_DESK_MAX_TOOL_ITERATIONS": "many"}
        ),
        Case(
            "bad-env-list", ("list", "--db", "{db}"), 4, env={"EVIDENCE_DESK_TRIGGER_KEYWORDS": "[unclosed"}
        ),
        Case("corpus-is-a-file", ("list", "--db", "{db}", "--corpus", "{afile}"), 4, {"afile": b"x"}),
        Case(
            "team-unknown-suffix",
            ("run", "t", "--db", "{db}", "--script", "{script.json}", "--team", "{t.yaml}"),
            4,
            {"script.json": SCRIPT, "t.yaml": b"nodes: []"},
        ),
    ]


def all_cases() -> list[Case]:
    cases = (
        nesting_cases()
        + encoding_and_size_cases()
        + schema_cases()
        + task_id_cases()
        + database_cases()
        + flag_cases()
    )
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return cases


HUGE_BYTES = MAX_INPUT_BYTES + 1
