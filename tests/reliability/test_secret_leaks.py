"""No secret leaves the workspace: not in bundles, reports, ``show --json --redact``, nor on stderr.

One fake secret of every kind the redactor knows is planted where real ones turn up: the task
text, the agent's answer, the validator's response, a corpus document the agent reads, the
environment and the OS keyring. Tasks run through the real pipeline on the scripted provider; every
way out is then scanned for every planted value (and for its tail, so a half-masked key also fails).
Values are built at runtime and are obviously fake.
"""

from __future__ import annotations

import json
import zipfile

from tests.integration.conftest import Desk, verdict
from tests.keyrings import MemoryKeyring
from tests.secret_samples import SHAPED

ENV_SECRET = ("ACME_SERVICE_TOKEN", "plain-" + "Ww9" * 6)  # no shape: only the environment knows it
KEYRING_SECRET = ("MISTRAL_API_KEY", "keyring-" + "Vv8" * 6)


def planted() -> list[str]:
    return [*SHAPED.values(), ENV_SECRET[1], KEYRING_SECRET[1]]


def _block(label: str) -> str:
    return "\n".join(f"{kind}: {value}" for kind, value in SHAPED.items()) + f"\n({label})\n"


def _leaks(text: str) -> list[str]:
    found = []
    for value in planted():
        # The whole value, or the tail of its key material (a half-masked key is still a leak).
        tail = value.strip().splitlines()[-2][-16:] if "PRIVATE KEY" in value else value[-16:]
        if value in text or tail in text:
            found.append(value[:12] + "…")
    return found


def run_secret_task(desk: Desk, ring: MemoryKeyring) -> str:
    (desk.root / "corpus" / "vault.md").write_text("# Vault\n\n" + _block("corpus"), encoding="utf-8")
    desk.monkeypatch.setenv(*ENV_SECRET)
    desk.monkeypatch.delenv(KEYRING_SECRET[0], raising=False)
    ring.set_password("evidence-desk", *KEYRING_SECRET)
    read = {"tool_calls": [{"name": "read_document", "arguments": {"document_id": "vault.md"}}]}
    answer = f"The vault holds these. {_block('answer')} Env {ENV_SECRET[1]} keyring {KEYRING_SECRET[1]}"
    desk.script(
        [
            {"model": "agent", "turns": [read, {"content": answer}]},
            {
                "model": "validator",
                "turns": [{"content": verdict("accepted", 0.9, issues=[f"echoes {v}" for v in planted()])}],
            },
        ]
    )
    desk.env(coherence_max_issues=100)  # the acceptance carries the planted secrets as issues
    task = desk.cli_json("run", f"List the keys in the vault. {_block('task')} {ENV_SECRET[1]}")
    assert task["status"] == "awaiting_feedback", task
    raw = desk.cli_json("show", str(task["id"]))
    tool = raw["attempts"][0]["packet"]["main_run"]["tool_results"][0]["content"]
    assert all(v in tool for v in SHAPED.values())  # the planting worked: the evidence holds them all
    return str(task["id"])


def test_no_planted_secret_leaves_the_workspace(desk: Desk, memory_keyring: MemoryKeyring) -> None:
    task_id = run_secret_task(desk, memory_keyring)
    outputs: dict[str, str] = {}

    bundle = desk.root / "out" / "case.zip"
    code, out, err = desk.cli("export", task_id, "-o", str(bundle))
    assert code == 0, err
    outputs["export stdout/stderr"] = out + err
    with zipfile.ZipFile(bundle) as zf:
        for name in zf.namelist():
            outputs[f"bundle {name}"] = name + zf.read(name).decode("utf-8")
    outputs["bundle raw bytes"] = bundle.read_bytes().decode("latin-1")

    report = desk.root / "out" / "report.html"
    code, out, err = desk.cli("report", task_id, "-o", str(report))
    assert code == 0, err
    outputs["report"] = report.read_text(encoding="utf-8") + out + err

    from_bundle = desk.root / "out" / "from-bundle.html"
    code, out, err = desk.cli("report", task_id, "--bundle", str(bundle), "-o", str(from_bundle))
    assert code == 0, err
    outputs["report from bundle"] = from_bundle.read_text(encoding="utf-8") + out + err

    code, out, err = desk.cli("show", task_id, "--json", "--redact")
    assert code == 0, err
    outputs["show --json --redact"] = out + err
    code, out, err = desk.cli("show", task_id, "--redact")
    assert code == 0, err
    outputs["show --redact"] = out + err

    code, out, err = desk.cli("verify", str(bundle))
    assert code == 0, err
    outputs["verify"] = out + err

    leaks = {where: found for where, text in outputs.items() if (found := _leaks(text))}
    assert leaks == {}

    with zipfile.ZipFile(bundle) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    counted = {r["label"]: r["count"] for r in manifest["redactions"]}
    for kind in SHAPED:
        assert counted.get(kind, 0) >= 3, (kind, counted)  # task text, answer, evidence at least
    assert counted[f"value of ${ENV_SECRET[0]}"] >= 2
    assert counted[f"value of ${KEYRING_SECRET[0]}"] >= 1
    assert "[REDACTED]" in outputs["report"] and "[REDACTED]" in outputs["show --json --redact"]


def test_redact_text_masks_a_copied_response(desk: Desk) -> None:
    """The one function the desk calls before anything reaches the clipboard."""
    from core.bundle.redact import redact_text

    text = "raw response: " + " ".join(SHAPED.values())
    masked = redact_text(text, environ={})
    assert _leaks(masked) == [] and masked.startswith("raw response: [REDACTED]")


def test_credentials_never_reach_the_database(desk: Desk, memory_keyring: MemoryKeyring) -> None:
    """API keys the program holds (environment, keyring) are used, never stored: not in events, not
    even in full request snapshots, unless a model or a document writes them into the content."""
    env_key = ("OPENAI_API_KEY", "sk-" + "Tt7" * 16)
    ring_key = ("ANTHROPIC_API_KEY", "sk-ant-" + "Rr6" * 16)
    desk.monkeypatch.setenv(*env_key)
    memory_keyring.set_password("evidence-desk", *ring_key)
    desk.env(debug_full_request_snapshots=True)
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides come from the Moon's pull."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["status"] == "awaiting_feedback", task
    stored = b"".join(p.read_bytes() for p in desk.db.parent.glob(desk.db.name + "*"))
    assert b"Tides come from" in stored  # the scan reads what the run wrote
    for _name, value in (env_key, ring_key):
        assert value.encode() not in stored
