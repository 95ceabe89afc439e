"""The input boundary: every user-supplied file is a bounded, UTF-8, shallow regular file, or one line."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.errors import InputError
from core.inputs import MAX_DEPTH, load_json_file, load_toml_file, loads_json, loads_toml, read_input_bytes


def test_nesting_at_the_limit_is_accepted_and_beyond_it_refused() -> None:
    assert loads_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    for depth in (MAX_DEPTH + 1, 5_000, 200_000):
        with pytest.raises(json.JSONDecodeError, match="nested more than"):
            loads_json("[" * depth + "]" * depth)


def test_deep_toml_is_refused(tmp_path: Path) -> None:
    for body in ("a = " + "[" * 50_000 + "]" * 50_000, "[" + ".".join(["t"] * 500) + "]\nx = 1\n"):
        path = tmp_path / "deep.toml"
        path.write_text(body, encoding="utf-8")
        with pytest.raises(InputError, match=r"nested|not valid TOML"):
            load_toml_file(path, what="team template")


def test_a_long_dotted_key_is_refused_before_toml_reads_it() -> None:
    # tomllib reads a dotted key in time quadratic in its length (100,000 segments: ~17 s), so
    # the refusal must come from the scan before it; counted calls, not a clock, say which did.
    from core import inputs

    calls: list[int] = []
    real = inputs.tomllib.loads

    def counted(text: str) -> dict[str, object]:
        calls.append(len(text))
        return real(text)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(inputs.tomllib, "loads", counted)
        for body in (
            "[" + ".".join(["t"] * 100_000) + "]\nx = 1\n",
            ".".join(['"a.b"'] * (MAX_DEPTH + 1)) + " = 1\n",  # quoted segments count as segments
            "x = { " + " . ".join(["t"] * 5_000) + " = 1 }\n",
        ):
            with pytest.raises(tomllib.TOMLDecodeError, match="dotted key nested more than"):
                loads_toml(body)
        assert calls == []
        # Dots in strings, comments, floats and times are not keys: all of this is read.
        fine = (
            'x = "' + ".".join(["w"] * 5_000) + '"\n'
            'y = """\n' + ". ".join(["Yes"] * 500) + '\n"""\n'
            "z = '" + "a." * 300 + "'\n"
            "w = '''\n" + "b." * 300 + "\n'''\n"
            "# " + "c." * 400 + "\n"
            "f = [1.5, 2.5, 3.5]\nwhen = 1979-05-27T07:32:00.999\n"
            "[" + ".".join(["t"] * (MAX_DEPTH - 1)) + "]\nx = 1\n"
        )
        assert loads_toml(fine)["f"] == [1.5, 2.5, 3.5]
        assert len(calls) == 1


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it blocking would hang until a writer came along
    with pytest.raises(InputError, match="FIFO"):
        read_input_bytes(fifo, what="script")
    with pytest.raises(InputError, match="folder"):
        read_input_bytes(tmp_path, what="script")
    with pytest.raises(InputError, match="no such file"):
        read_input_bytes(tmp_path / "absent.json", what="script")


def test_size_cap_and_encoding(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(2048)
    with pytest.raises(InputError, match="too large"):
        load_json_file(big, what="output schema", max_bytes=1024)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b'{"a": "\xff\xfe"}')
    with pytest.raises(InputError, match="not UTF-8"):
        load_json_file(binary, what="output schema")
    huge_int = tmp_path / "int.json"
    huge_int.write_text("1" * 6000, encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        load_json_file(huge_int, what="output schema")


@pytest.mark.parametrize("flag", ["--script", "--output-schema", "--team"])
def test_cli_refuses_deep_and_binary_files_with_exit_4(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"conversations": [{"model": "agent", "turns": [{"content": "x"}]}]}))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00\x01garbage")
    for bad in (deep, binary):
        args = ["run", "task", "--db", str(tmp_path / "ws.sqlite3"), "--create", "--script", str(script)]
        args += [flag, str(bad)] if flag != "--script" else []
        if flag == "--script":
            args[args.index("--script") + 1] = str(bad)
        capsys.readouterr()
        assert cli_main(args) == 4
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "internal error" not in err, err
    assert not (tmp_path / "ws.sqlite3").exists() or flag == "--team"
