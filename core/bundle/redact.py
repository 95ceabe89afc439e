"""Masking secrets in everything that leaves the workspace: bundles, reports, ``show --redact``, copies.

One ``Redactor`` serves every way out, so a key masked in a bundle is masked in the report of the same
task too. It masks, in order: the caller's own patterns, the values of secret environment variables
and of API keys kept in the OS keyring, and every shape in ``core.secrets.secret_shapes`` (the
detect-secrets set plus a few it lacks). Redaction works on decoded values (every string, and every
dict key); a writer then re-scans its finished bytes (``leftover``) and refuses to write if a pattern
still matches anywhere (for example across JSON punctuation). What was masked is summarised as a
label (the kind of secret, or the variable's name), a fingerprint of the pattern and a count, never
the matched text; a pattern is shown verbatim only when it is not itself a match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.bundle.format import BundleError, sha256_hex
from core.bundle.needles import Needle, needle_of
from core.secrets import (
    keyring_secret_values,
    remembered_secret_values,
    secret_env_values,
    secret_shape_regexes,
    secret_shapes,
)

__all__ = ["MASK", "Redactor", "redact_text"]

MASK = "[REDACTED]"


@dataclass
class Rule:
    label: str
    regex: re.Pattern[str]
    show_pattern: bool
    # Literals one of which every match contains: lets a big export skip the regex on text that
    # cannot match (derived from the pattern itself, so it never masks less).
    needle: Needle | None = None
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
    """Applies every rule to every string; counts matches per rule (or kind of secret) and per entry."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        for own in rules:
            if own.needle is None:
                own.needle = needle_of(own.regex)
        self.shapes = secret_shape_regexes()
        self.shape_needles = [needle_of(regex) for _, regex in self.shapes]
        self.kinds: dict[str, Rule] = {}
        for shape in secret_shapes():
            rule = self.kinds.get(shape.kind)
            joined = f"{rule.regex.pattern}|{shape.pattern}" if rule else shape.pattern
            # A pattern that is itself a match (a PEM header) is named by its fingerprint only.
            shows = all(regex.search(joined) is None for _, regex in self.shapes)
            self.kinds[shape.kind] = Rule(label=shape.kind, regex=re.compile(joined), show_pattern=shows)

    @classmethod
    def build(
        cls,
        patterns: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
        *,
        keyring: bool | None = None,
    ) -> Redactor:
        """``environ`` defaults to the process environment; keyring values are added when ``keyring``
        (default: when reading the process environment). Blocking (the keyring): async callers use a thread.
        """
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
        values = {f"value of ${name}": value for name, value in secret_env_values(environ)}
        if keyring if keyring is not None else environ is None:
            for name, value in keyring_secret_values():
                values.setdefault(f"value of ${name}", value)
        # Credentials the program has read (a profile's key, the database password, the signing
        # key), whatever variable or entry held them.
        for label, value in remembered_secret_values():
            if value not in values.values():
                values[f"value of {label}"] = value
        # Longest first, so a value containing another is masked whole.
        for label, value in sorted(values.items(), key=lambda kv: -len(kv[1])):
            rules.append(
                Rule(
                    label=label,
                    regex=re.compile(re.escape(value)),
                    show_pattern=False,
                    needle=Needle((value,), ignore_case=False),
                )
            )
        return cls(rules)

    def scans(self) -> list[tuple[Rule, re.Pattern[str], Needle | None]]:
        """Every scan in the order it is applied: the caller's rules, then each secret shape."""
        own = [(rule, rule.regex, rule.needle) for rule in self.rules]
        shapes = [
            (self.kinds[kind], regex, needle)
            for (kind, regex), needle in zip(self.shapes, self.shape_needles, strict=True)
        ]
        return [*own, *shapes]

    def text(self, value: str, entry: str) -> str:
        if not value:
            return value
        lowered: list[str] = []  # computed once, only if a case-insensitive rule asks
        seen: dict[str, bool] = {}  # literals searched in this text, until a rule changes it
        for rule, regex, needle in self.scans():
            if needle is not None and not needle.present(value, lowered, seen):
                continue
            value, n = regex.subn(MASK, value)
            if n:
                rule.count += n
                rule.entries.add(entry)
                lowered.clear()
                seen.clear()
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

    def leftover(self, name: str, data: bytes | str) -> str | None:
        """The label of the first rule that still matches ``data``; the write must then be refused."""
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        lowered: list[str] = []
        seen: dict[str, bool] = {}
        for rule, regex, needle in self.scans():
            if regex.search(name):
                return rule.label
            if needle is not None and not needle.present(text, lowered, seen):
                continue
            if regex.search(text):
                return rule.label
        return None

    def summary(self) -> list[dict[str, Any]]:
        """Every rule that masked something: kind (or variable name) and count, never the value."""
        return [r.summary() for r in [*self.rules, *self.kinds.values()] if r.count]


def redact_text(text: str, patterns: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> str:
    """Mask ``text`` the way a bundle or report is masked; for anything copied or shown outside the
    workspace (the desk's copy-to-clipboard of raw responses). Blocking (reads the keyring once)."""
    return Redactor.build(patterns, environ).text(text, "text")
