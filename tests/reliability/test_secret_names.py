"""A credential is masked by its value, whatever variable, keyring entry or URL held it.

Keys named by a profile (``api_key_env = "VLLM_APIKEY"``, ``api_key_keyring = "lab-server"``) fit no
name rule; the database password sits inside a URL; a Slack webhook's pattern is compiled by
detect-secrets with ``re.VERBOSE``. Each is planted where a real one turns up (the answer, a
provider's 401 echoing the key sent) and every way out is scanned for it. Values are obviously fake.
"""

from __future__ import annotations

import json
import zipfile

import pytest

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.integration.conftest import Desk, verdict
from tests.keyrings import MemoryKeyring

ENV_KEY = ("VLLM_APIKEY", "vllm-" + "Qq4" * 8)  # the name fits no rule; the profile names it
RING_KEY = ("lab-server", "ring-" + "Pp3" * 8)  # a custom keyring entry, also named by a profile
WEBHOOK = "https://hooks.slack.com/services/T" + "0A1B2C3D4" + "/B" + "5E6F7G8H9" + "/" + "x7Y" * 8


def _profiles(desk: Desk, ring: MemoryKeyring) -> None:
    desk.monkeypatch.setenv(*ENV_KEY)
    ring.set_password("evidence-desk", *RING_KEY)
    desk.env(profiles__agent__api_key_env=ENV_KEY[0], profiles__validator__api_key_keyring=RING_KEY[0])


def _leaks(text: str) -> list[str]:
    return [v[:10] + "…" for v in (ENV_KEY[1], RING_KEY[1], WEBHOOK) if v in text or v[-14:] in text]


def test_keys_under_any_name_are_masked_in_everything_that_leaves(
    desk: Desk, memory_keyring: MemoryKeyring
) -> None:
    _profiles(desk, memory_keyring)
    desk.env(coherence_max_issues=100)  # the acceptance carries the planted secrets as issues
    answer = f"Keys: {ENV_KEY[1]} and {RING_KEY[1]}; alerts go to {WEBHOOK}."
    desk.script(
        [
            {"model": "agent", "turns": [{"content": answer}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9, issues=[answer])}]},
        ]
    )
    task = desk.cli_json("run", f"Which keys? {WEBHOOK}")
    assert task["status"] == "awaiting_feedback", task
    task_id = str(task["id"])
    stored = b"".join(p.read_bytes() for p in desk.db.parent.glob(desk.db.name + "*"))
    assert ENV_KEY[1].encode() in stored  # the planting worked: the workspace holds the answer as given
    assert ENV_KEY[1] not in desk.cli("show", task_id)[1]  # even plain `show` masks a held credential
    outputs: dict[str, str] = {}
    bundle = desk.root / "case.zip"
    code, out, err = desk.cli("export", task_id, "-o", str(bundle))
    assert code == 0, err
    with zipfile.ZipFile(bundle) as zf:
        outputs["bundle"] = "".join(n + zf.read(n).decode("utf-8") for n in zf.namelist())
    report = desk.root / "report.html"
    code, out, err = desk.cli("report", task_id, "-o", str(report))
    assert code == 0, err
    outputs["report"] = report.read_text(encoding="utf-8")
    for argv in (("show", task_id, "--redact"), ("show", task_id, "--json", "--redact"), ("decisions",)):
        code, out, err = desk.cli(*argv)
        assert code == 0, err
        outputs[" ".join(argv)] = out + err
    assert {where: found for where, text in outputs.items() if (found := _leaks(text))} == {}
    with zipfile.ZipFile(bundle) as zf:
        labels = {r["label"] for r in json.loads(zf.read("manifest.json"))["redactions"]}
    assert f"value of ${ENV_KEY[0]}" in labels and "Slack Token" in labels


def test_a_401_echoing_the_key_is_masked_on_stderr_in_json_and_in_the_database(
    desk: Desk, fake_llm: FakeLLMServer, memory_keyring: MemoryKeyring
) -> None:
    _profiles(desk, memory_keyring)
    desk.monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base)
    desk.env(agent_model="openai/fake-agent", validator_model="openai/fake-validator")
    desk.script([{"model": "unused", "turns": [{"content": "unused"}]}])
    echo = {"error": {"message": f"Incorrect API key provided: {ENV_KEY[1]}", "code": "invalid_api_key"}}
    fake_llm.push(Reply(kind="fault", status=401, raw_body=json.dumps(echo)))
    code, out, err = desk.cli("run", "How deep is the trench?", "--json")
    assert code == 5, err
    assert fake_llm.requests and ENV_KEY[1] in fake_llm.requests[0].headers.get("authorization", "")
    assert json.loads(out)["error"] and "Incorrect API key" in json.loads(out)["error"]
    stored = b"".join(p.read_bytes() for p in desk.db.parent.glob(desk.db.name + "*"))
    assert b"Incorrect API key" in stored  # the error was stored: the scan reads what the run wrote
    assert _leaks(out) == [] and _leaks(err) == [] and ENV_KEY[1].encode() not in stored


def test_the_database_password_and_a_slack_webhook_are_masked_in_error_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PostgreSQL URL whose server refuses: the line names the server, never the password."""
    from core.bundle.redact import Redactor
    from core.cli.main import main
    from core.config import Settings
    from core.secrets import mask_secrets

    password = "pw-" + "Hh5" * 6
    url = f"postgresql+asyncpg://analyst:{password}@127.0.0.1:9/ws"
    Settings(db_url=url)
    said = mask_secrets(f"connect failed for {url}; see {WEBHOOK}")
    assert password not in said and WEBHOOK[-14:] not in said and "127.0.0.1:9" in said
    assert _leaks(Redactor.build(environ={}).text(f"{password} {WEBHOOK}", "t")) == []
    assert password not in Redactor.build(environ={}).text(password, "t")
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")
    capsys.readouterr()
    main(["list", "--db", url])
    out, err = capsys.readouterr()
    assert password not in out + err and err.count("\n") == 1, err
