"""The README's settings table names every setting (issue 32: it lacked schema_fallback_model,
schema_stuck_after and others), and its specification section keeps the rows issue 32 lists."""

from __future__ import annotations

from pathlib import Path

from core.config import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_every_setting_is_in_the_configuration_table() -> None:
    table = _section("Configuration")
    missing = [name for name in Settings.model_fields if f"`{name}`" not in table]
    assert missing == [], f"settings missing from README's Configuration table: {missing}"


def test_the_differences_from_the_seeds_are_listed_with_their_reasons() -> None:
    section = _section("Where we differ from the specification, and why")
    for topic in (
        "validation_mode = always",
        "trigger_keywords = []",
        "pre-checks",
        "30 messages",
        "output format",
        "`failed` is open",
        "heartbeat firing",
        "worker",
        "verify_team_nodes",
    ):
        assert topic in section, topic
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    assert all(line.count(" | ") >= 2 and not line.rstrip().endswith("|  |") for line in rows[1:])
