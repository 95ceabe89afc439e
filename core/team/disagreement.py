"""Finding where team nodes contradict each other, deterministically, from their answers' text.

A node answer is read sentence by sentence for claims: numbers with units ("8,849 m", "3.5 km",
"42%", "$1.2 million"), dates ("2024-03-12", "12 March 2024", "March 12, 2024") and quoted names.
Each claim gets a subject key from the words before it in its sentence: the nearest run of
capitalised words (an entity, e.g. "Everest"), with the plain nouns right after it ("Everest base
camp"), else the last three content words, lower-cased, stop words and measured attributes
("height", "elevation") dropped. Two nodes disagree when, for one subject and one kind, none of the
values one states equals any value the other states.

Equality is exact in the unit written, so "8,849 m" and "8849 metres" agree while "8,849 m" and
"8,848 m" do not. Only when the units differ ("29,032 ft" against "8,849 m") do values agree within
the rounding their written precision allows (half a unit of each one's last digit).

No model is asked: the same answers give the same marks on every replay, and a mark is a pointer for
an analyst, never a verdict. A subject the heuristic names wrongly costs a missed mark, not a claim
that was never made: every mark quotes the passages it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from core.domain.disagreement import ClaimKind, Disagreement, NodeStatement
from core.domain.evidence import NodeRunResult

__all__ = ["MAX_CHARS", "Claim", "extract_claims", "find_disagreements", "format_disagreements"]

# alias -> (kind, compare unit, factor to the compare unit). Longest aliases are tried first.
_UNITS: dict[str, tuple[ClaimKind, str, float]] = {}


def _add(kind: ClaimKind, unit: str, factor: float, *aliases: str) -> None:
    for alias in aliases:
        _UNITS[alias.lower()] = (kind, unit, factor)


_add(ClaimKind.LENGTH, "m", 1.0, "m", "metre", "metres", "meter", "meters")
_add(ClaimKind.LENGTH, "m", 1000.0, "km", "kilometre", "kilometres", "kilometer", "kilometers")
_add(ClaimKind.LENGTH, "m", 0.01, "cm", "centimetre", "centimetres", "centimeter", "centimeters")
_add(ClaimKind.LENGTH, "m", 0.001, "mm", "millimetre", "millimetres", "millimeter", "millimeters")
_add(ClaimKind.LENGTH, "m", 0.3048, "ft", "feet", "foot")
_add(ClaimKind.LENGTH, "m", 1609.344, "mi", "mile", "miles")
_add(ClaimKind.AREA, "km²", 1.0, "km²", "km2", "sq km", "square kilometres", "square kilometers")
_add(ClaimKind.AREA, "km²", 0.01, "ha", "hectare", "hectares")
_add(ClaimKind.AREA, "km²", 2.589988, "sq mi", "square miles", "square mile")
_add(ClaimKind.MASS, "kg", 1.0, "kg", "kilogram", "kilograms", "kilo", "kilos")
_add(ClaimKind.MASS, "kg", 0.001, "g", "gram", "grams")
_add(ClaimKind.MASS, "kg", 1000.0, "t", "tonne", "tonnes", "metric tons")
_add(ClaimKind.MASS, "kg", 0.45359237, "lb", "lbs")
_add(ClaimKind.DURATION, "s", 1.0, "s", "sec", "secs", "second", "seconds")
_add(ClaimKind.DURATION, "s", 60.0, "min", "mins", "minute", "minutes")
_add(ClaimKind.DURATION, "s", 3600.0, "h", "hr", "hrs", "hour", "hours")
_add(ClaimKind.DURATION, "s", 86400.0, "day", "days")
_add(ClaimKind.DURATION, "s", 604800.0, "week", "weeks")
_add(ClaimKind.DURATION, "s", 31557600.0, "year", "years", "yr", "yrs")
_add(ClaimKind.TEMPERATURE, "°C", 1.0, "°c", "degrees celsius", "degrees c")
_add(ClaimKind.TEMPERATURE, "°C", 5 / 9, "°f", "degrees fahrenheit", "degrees f")
_add(ClaimKind.PERCENT, "%", 1.0, "%", "percent", "per cent")
_add(ClaimKind.COUNT, "people", 1.0, "people", "inhabitants", "residents", "persons")
_CURRENCIES = {"$": "USD", "us$": "USD", "usd": "USD", "dollars": "USD", "€": "EUR", "eur": "EUR"}
_CURRENCIES |= {"euros": "EUR", "£": "GBP", "gbp": "GBP"}
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9, "m": 1e6, "k": 1e3}
_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for m in names
}


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


_NUM = r"(?P<num>[-−]?(?:\d{1,3}(?:[,\u00a0\u202f\u2009]\d{3})+|\d+)(?:\.\d+)?)"
_SCALE_WORDS = r"(?:\s?(?P<scale>thousand|million|billion|trillion))?"
_QUANTITY = re.compile(
    rf"(?<![\w.,$€£]){_NUM}{_SCALE_WORDS}\s?(?P<unit>{_alternation(_UNITS)})(?![\w²])", re.IGNORECASE
)
_MONEY_BEFORE = re.compile(
    rf"(?P<cur>US\$|\$|€|£|USD|EUR|GBP)\s?{_NUM.replace('[-−]?', '')}"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|m|k)(?![\w]))?",
    re.IGNORECASE,
)
_MONEY_AFTER = re.compile(
    rf"(?<![\w.,$€£]){_NUM}{_SCALE_WORDS}\s(?P<cur>dollars|euros|USD|EUR|GBP)(?!\w)", re.IGNORECASE
)
_MONTH = _alternation(_MONTHS)
_DATE_ISO = re.compile(r"(?<![\w-])(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?![\w-])")
_DATE_DMY = re.compile(
    rf"(?<!\w)(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m>{_MONTH})\.?,?\s+(?P<y>\d{{4}})(?!\w)", re.I
)
_DATE_MDY = re.compile(
    rf"(?<!\w)(?P<m>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})(?!\w)", re.I
)
_QUOTED = re.compile(r"\"(?P<q>[^\"\n]{2,80})\"|“(?P<c>[^”\n]{2,80})”")
_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_SENTENCE_END = re.compile(r"[.!?]+[\"”’)\]]*\s+|\n+")
_ABBREVIATIONS = {"mt", "dr", "st", "mr", "mrs", "ms", "no", "vs", "approx", "ca", "etc", "e.g", "i.e", "fig"}


def _words(text: str) -> frozenset[str]:
    """Word lists read better as text than as 100-item literals."""
    return frozenset(text.split())


_STOP = _words(
    "a an the it its this that these those there here in on at of to for from with by as and or but so "
    "if then than also both either neither not no yes i we our you your they their he she his her "
    "according however although while during after before since until about around approximately "
    "roughly nearly some over under above below into onto per each every all any most more less "
    "node answer answers source sources note today currently now recent latest official officially "
    "based found report reports reported says said states stated estimate estimated estimates"
)
_VERBS = _words(
    "is are was were be been being stands stand stood measures measured measure reaches reached reach "
    "rises rose rise lies lay sits sat has have had became becomes become totals totalled totaled total "
    "costs cost weighs weighed weigh covers covered spans spanned holds held lasts lasted took takes "
    "grew grows fell falls dropped rose climbed opened opens closed began begins ended ends named called "
    "known listed given put set gives give makes made"
)
_ATTRIBUTES = _words(
    "height elevation altitude length depth width area size population price cost value temperature "
    "mass weight duration age distance tall high long wide deep level sea summit top peak total share "
    "rate date day name figure number amount"
)
_GENERIC = {"mount", "mt", "mountain", "lake", "river"}
_NOT_ENTITY = _STOP | _VERBS | frozenset(_MONTHS)
_NOT_CONTENT = _NOT_ENTITY | _ATTRIBUTES
_REACH = 300
# Only this much of each node's answer is read (an answer is a few kilobytes; this bounds the
# rare huge one to about a second, since synthesis builds its message on the event loop).
MAX_CHARS = 200_000  # a subject is looked for this many characters back at most: a run-on text stays linear


@dataclass(frozen=True, slots=True)
class Claim:
    """One value stated in a node's answer, with what it is about and where it was said."""

    subject: str
    kind: ClaimKind
    unit: str  # compare unit ("m", "%", "USD"); "" for dates and names
    written_unit: str  # the unit and scale as written: values agree exactly only within one
    value: float | str
    precision: float  # one unit of the last written digit, in the compare unit (0 for exact kinds)
    text: str
    start: int
    end: int
    sentence: tuple[int, int]

    def agrees_with(self, other: Claim) -> bool:
        if isinstance(self.value, str) or isinstance(other.value, str):
            return self.value == other.value
        if self.written_unit == other.written_unit:
            return abs(self.value - other.value) <= 1e-9 * max(1.0, abs(self.value))
        return abs(self.value - other.value) <= (self.precision + other.precision) / 2 + 1e-9

    def normalised(self) -> str:
        if isinstance(self.value, str):
            return self.value
        shown = f"{self.value:.6f}".rstrip("0").rstrip(".")
        return f"{shown} {self.unit}"


def _sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group().strip() and not m.group().startswith("\n"):
            before = _WORD.findall(text[max(start, m.start() - 40) : m.start()])  # the last word only
            last = before[-1].lower() if before else ""
            nxt = text[m.end() : m.end() + 1]
            if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()) or nxt.islower():
                continue  # "Mt. Everest", "J. Smith", "approx. 3 km": not a sentence end
        spans.append((start, m.start() + len(m.group().rstrip())))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def _number(raw: str) -> tuple[float, float]:
    """The value of a written number and one unit of its last digit."""
    digits = re.sub(r"[,\u00a0\u202f\u2009]", "", raw).replace("−", "-")
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    return float(digits), 10.0**-decimals


_Quantity = tuple[int, int, ClaimKind, str, str, float, float]  # span, kind, unit, as written, value, step


def _glued_letter(text: str, m: re.Match[str]) -> bool:
    """A one-letter unit written straight after the number ("1990s", "5G", "4K") is a decade or a
    product name far more often than seconds or grams: a one-letter unit needs a space before it."""
    written = m.group("unit")
    return len(written) == 1 and written.isalpha() and not text[m.start("unit") - 1].isspace()


def _quantities(text: str, taken: bytearray) -> list[_Quantity]:
    found: list[_Quantity] = []
    for pattern in (_MONEY_BEFORE, _MONEY_AFTER, _QUANTITY):
        for m in pattern.finditer(text):
            if any(taken[m.start() : m.end()]):
                continue
            value, step = _number(m.group("num"))
            scale_word = (m.group("scale") or "").lower()
            scale = _SCALES.get(scale_word, 1.0)
            if "cur" in pattern.groupindex:
                kind, unit, factor = ClaimKind.MONEY, _CURRENCIES[m.group("cur").lower()], 1.0
                written = f"{unit} {scale_word}"
            else:
                if _glued_letter(text, m):
                    continue
                kind, unit, factor = _UNITS[re.sub(r"\s+", " ", m.group("unit").lower())]
                written = f"{scale_word} {m.group('unit').lower()}"
                if kind is ClaimKind.TEMPERATURE and factor != 1.0:
                    value = (value - 32) * factor
                    found.append((m.start(), m.end(), kind, unit, written, value, step * factor))
                    taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
                    continue
            found.append(
                (m.start(), m.end(), kind, unit, written, value * scale * factor, step * scale * factor)
            )
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    return found


def _dates(text: str, taken: bytearray) -> list[tuple[int, int, str]]:
    found = []
    for pattern in (_DATE_ISO, _DATE_DMY, _DATE_MDY):
        for m in pattern.finditer(text):
            if any(taken[m.start() : m.end()]):
                continue
            month = m.group("m")
            number = int(month) if month.isdigit() else _MONTHS[month.lower()]
            try:
                day = date(int(m.group("y")), number, int(m.group("d")))
            except ValueError:
                continue  # "2024-13-45" is not a date, so it is no claim
            found.append((m.start(), m.end(), day.isoformat()))
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    return found


def _names(text: str, taken: bytearray) -> list[tuple[int, int, str]]:
    found = []
    for m in _QUOTED.finditer(text):
        name = (m.group("q") or m.group("c") or "").strip()
        if not name or not (name[0].isupper() or name[0].isdigit()) or len(name.split()) > 6:
            continue  # a quoted sentence or phrase, not a name
        if any(taken[m.start() : m.end()]):
            continue
        found.append((m.start(), m.end(), " ".join(name.casefold().split())))
        taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    return found


def _clean(word: str) -> str:
    word = word.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") else word.rstrip("'")


def _subject_of(words: list[str]) -> str:
    """The entity nearest the value: the last capitalised run and the plain nouns after it."""
    run_end = -1
    for i in range(len(words) - 1, -1, -1):
        if _has_entity(words[i : i + 1]):
            run_end = i
            break
    if run_end >= 0:
        run_start = run_end
        while (
            run_start > 0 and words[run_start - 1][0].isupper() and _clean(words[run_start - 1]) not in _STOP
        ):
            run_start -= 1
        key = [_clean(w) for w in words[run_start : run_end + 1]]
        for w in words[run_end + 1 :]:
            c = _clean(w)
            if c in _STOP or c in _VERBS:
                break
            if c not in _ATTRIBUTES:
                key.append(c)
        key = [k for k in key if k not in _GENERIC] or key
        return " ".join(key)
    return " ".join(_content(words)[-3:])


def _has_entity(words: list[str]) -> bool:
    return any(w[0].isupper() and _clean(w) not in _NOT_ENTITY for w in words)


def _content(words: list[str]) -> list[str]:
    return [c for c in (_clean(w) for w in words) if c not in _NOT_CONTENT]


def _subject_words(segment: list[str], whole: list[str]) -> list[str]:
    """The words since the previous claim when they name an entity, else the sentence's so far.

    "Everest is 8,849 m and K2 is 8,611 m": the second value is K2's. "Everest is 8,849 m tall, or
    29,032 ft": the second value is still Everest's.
    """
    if _has_entity(segment):
        return segment
    if _has_entity(whole):
        return whole
    return segment if _content(segment) else whole


def extract_claims(text: str) -> list[Claim]:
    """Every claim in ``text`` that has a subject, in the order they are written."""
    taken = bytearray(len(text))  # characters already part of a claim: a date's day is no number
    spans: list[tuple[int, int, ClaimKind, str, str, float | str, float]] = []
    for s, e, iso in _dates(text, taken):
        spans.append((s, e, ClaimKind.DATE, "", "", iso, 0.0))
    for s, e, name in _names(text, taken):
        spans.append((s, e, ClaimKind.NAME, "", "", name, 0.0))
    spans.extend(_quantities(text, taken))
    spans.sort(key=lambda x: x[0])
    claims: list[Claim] = []
    sentences = _sentences(text)
    at = 0  # the sentence of the current claim: claims and sentences are both in text order
    earlier: list[tuple[int, int]] = []  # the claims before the current one in its sentence
    for s, e, kind, unit, written, value, precision in spans:
        while at < len(sentences) and sentences[at][1] <= s:
            at += 1
            earlier = []
        if at == len(sentences) or s < sentences[at][0]:
            continue
        sent = sentences[at]
        reach = max(sent[0], s - _REACH)
        segment = _WORD.findall(text[max(reach, earlier[-1][1]) if earlier else reach : s])
        before = list(text[reach:s])
        for cs, ce in reversed(earlier):  # earlier values are not subject words
            if ce <= reach:
                break
            before[max(cs, reach) - reach : ce - reach] = " " * (ce - max(cs, reach))
        earlier.append((s, e))
        subject = _subject_of(_subject_words(segment, _WORD.findall("".join(before))))
        if subject:
            claims.append(Claim(subject, kind, unit, written, value, precision, text[s:e], s, e, sent))
    return claims


def find_disagreements(nodes: Sequence[NodeRunResult]) -> list[Disagreement]:
    """Claims of one subject and kind on which two nodes' answers share no value.

    A node that states two values (two surveys, say) agrees with any node stating either of them;
    only nodes that never meet are a disagreement. Marks are ordered by where they are first said.
    Only the first ``MAX_CHARS`` characters of each answer are read.
    """
    by_key: dict[tuple[str, ClaimKind, str], dict[str, list[Claim]]] = {}
    texts: dict[str, str] = {}
    for node in nodes:
        if not node.output_text.strip():
            continue
        texts[node.node_id] = node.output_text
        seen: set[tuple[str, ClaimKind, str, str, float | str]] = set()
        for claim in extract_claims(node.output_text[:MAX_CHARS]):
            said = (claim.subject, claim.kind, claim.unit, claim.written_unit, claim.value)
            if said in seen:
                continue  # a value repeated in one answer is one statement (and keeps the pairs few)
            seen.add(said)
            per_node = by_key.setdefault((claim.subject, claim.kind, claim.unit), {})
            per_node.setdefault(node.node_id, []).append(claim)
    found: list[tuple[tuple[int, int], Disagreement]] = []
    order = {node_id: i for i, node_id in enumerate(texts)}
    for (subject, kind, unit), per_node in by_key.items():
        ids = list(per_node)
        clash = any(
            not any(a.agrees_with(b) for a in per_node[x] for b in per_node[y])
            for i, x in enumerate(ids)
            for y in ids[i + 1 :]
        )
        if not clash:
            continue
        statements = []
        for node_id in ids:
            distinct: list[Claim] = []
            for claim in per_node[node_id]:
                if not any(claim.agrees_with(d) for d in distinct):
                    distinct.append(claim)
            text = texts[node_id]
            for claim in distinct:
                s, e = claim.sentence
                statements.append(
                    NodeStatement(
                        node_id=node_id,
                        value=claim.text,
                        normalised=claim.normalised(),
                        passage=text[s:e],
                        passage_start=s,
                        value_start=claim.start,
                        value_end=claim.end,
                    )
                )
        first = per_node[ids[0]][0]
        found.append(
            (
                (order[ids[0]], first.start),
                Disagreement(subject=subject, kind=kind, unit=unit, statements=statements),
            )
        )
    found.sort(key=lambda x: x[0])
    return [d for _, d in found]


def format_disagreements(disagreements: Sequence[Disagreement]) -> str:
    """One line per mark, for prompts and the command line; "" when there is none."""
    return "\n".join(f"- {d.summary()}" for d in disagreements)
