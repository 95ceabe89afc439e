"""Masking text before it leaves the workspace.

Redaction works on decoded values (every string, and every dict key, of every exported item), and
the exporter then re-scans the finished bytes of every entry: if a pattern still matches anywhere
(for example across JSON punctuation), the export is refused rather than shipped with a leak. The
manifest records what was redacted as a label, a fingerprint of the pattern and a count, never the
matched text; a pattern is shown verbatim only when it is not itself a match (a literal secret is not).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.bundle.format import BundleError, sha256_hex
from core.secrets import KEY_SHAPES, secret_env_values

MASK = "[REDACTED]"


@dataclass
class Rule:
    label: str
    regex: re.Pattern[str]
    show_pattern: bool
    # A literal every match contains: lets a 50 MB export skip the regex on text that cannot match.
    needle: str | None = None
    count: int = 0
    entries: set[str] = field(default_factory=set)

    def summary(self) -> dict[str, Any]:
        pattern = self.regex.pattern
        return {
            "label": self.label,
            "pattern": pattern if self.show_pattern else None,
            "pattern_sha256": sha256_hex(pattern.encode("utf-8")),
            "count": self.count,
            "entries": sorted(self.entries),
        }


class Redactor:
    """Applies every rule to every string; counts matches per rule and per entry."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules

    @classmethod
    def build(cls, patterns: Iterable[str], environ: Mapping[str, str] | None = None) -> Redactor:
        rules: list[Rule] = []
        for i, pattern in enumerate(patterns, start=1):
            try:
                regex = re.compile(pattern)
            except re.error as exc:
                raise BundleError(f"invalid redaction pattern {pattern!r}: {exc}") from None
            if regex.search("") is not None:
                raise BundleError(
                    f"redaction pattern {pattern!r} matches empty text, so it would mask everything; "
                    "make it match something specific"
                )
            shows_itself = regex.search(pattern) is None and regex.search(MASK) is None
            rules.append(Rule(label=f"pattern {i}", regex=regex, show_pattern=shows_itself))
        # API keys are always redacted: the same definition of a secret as the gateway's.
        for name, value in secret_env_values(environ):
            rules.append(
                Rule(label=f"value of ${name}", regex=re.compile(re.escape(value)), show_pattern=False)
            )
        for label, pattern, needle in KEY_SHAPES:
            rules.append(Rule(label=label, regex=re.compile(pattern), show_pattern=True, needle=needle))
        return cls(rules)

    def text(self, value: str, entry: str) -> str:
        for rule in self.rules:
            if rule.needle is not None and rule.needle not in value:
                continue
            value, n = rule.regex.subn(MASK, value)
            if n:
                rule.count += n
                rule.entries.add(entry)
        return value

    def value(self, obj: Any, entry: str) -> Any:
        if isinstance(obj, str):
            return self.text(obj, entry)
        if isinstance(obj, dict):
            return {
                (self.text(k, entry) if isinstance(k, str) else k): self.value(v, entry)
                for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [self.value(v, entry) for v in obj]
        return obj

    def leftover(self, name: str, data: bytes) -> str | None:
        """The label of the first rule that still matches ``data``; the export must then be refused."""
        text = data.decode("utf-8", errors="replace")
        for rule in self.rules:
            if rule.needle is not None and rule.needle not in text and rule.needle not in name:
                continue
            if rule.regex.search(name) or rule.regex.search(text):
                return rule.label
        return None

    def summary(self) -> list[dict[str, Any]]:
        return [rule.summary() for rule in self.rules]
