"""A workspace's own validator templates: stored in the workspace, versioned, diffable.

Each save is a ``validator_template_saved`` event in the workspace's judge session (a session
of no task), its text the event's content; the latest version of each name replaces the
installed template of that name for every verdict the workspace gives (on PostgreSQL, for the
whole team). Nothing is overwritten: every version stays readable and diffable, and going back
to the installed template is a version of its own (``removed``).
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from datetime import datetime

from core.domain.event_codec import decode_as, encode
from core.domain.event_payloads import ValidatorTemplateSave
from core.domain.facts import EventKind
from core.errors import InvalidRequest
from core.store import Store
from core.store.judge_sql import JUDGE_SESSION_KIND, sessions_of_kind
from core.validation.prompt import INSTALLED, TemplateSet, template_source, validator_template_names

__all__ = [
    "WORKSPACE_LABEL",
    "TemplateState",
    "TemplateVersion",
    "diff_text",
    "judge_session",
    "save_template",
    "template_diff",
    "template_history",
    "template_states",
    "workspace_templates",
]

WORKSPACE_LABEL = "workspace"
MAX_TEMPLATE_CHARS = 256 * 1024


@dataclass(frozen=True, slots=True)
class TemplateVersion:
    name: str
    version: int
    sha256: str | None
    reviewer: str
    note: str
    removed: bool
    source: str | None  # None when removed
    saved_at: datetime


async def judge_session(store: Store, *, create: bool) -> str | None:
    """The workspace's judge session (templates, promotions): the oldest one, made when asked."""
    found = await sessions_of_kind(store, JUDGE_SESSION_KIND)
    if found:
        return found[0].id
    if not create:
        return None
    return (await store.create_session(task_id=None, kind=JUDGE_SESSION_KIND, label="judge")).id


async def template_history(store: Store, name: str | None = None) -> list[TemplateVersion]:
    """Every saved version (of one template, or all), oldest first."""
    out: list[TemplateVersion] = []
    for session in await sessions_of_kind(store, JUDGE_SESSION_KIND):
        for ev in await store.get_session_events(session.id, kinds=[EventKind.VALIDATOR_TEMPLATE_SAVED]):
            p = decode_as(ev, ValidatorTemplateSave)
            if name is None or p.name == name:
                source = None if p.removed else (ev.content or "")
                out.append(
                    TemplateVersion(
                        p.name, p.version, p.sha256, p.reviewer, p.note, p.removed, source, ev.created_at
                    )
                )
    return sorted(out, key=lambda v: (v.name, v.version, v.saved_at))


def _latest(history: list[TemplateVersion]) -> dict[str, TemplateVersion]:
    latest: dict[str, TemplateVersion] = {}
    for v in history:
        latest[v.name] = v
    return latest


async def workspace_templates(store: Store) -> TemplateSet:
    """The templates this workspace's verdicts render with: its latest versions over the installed."""
    latest = _latest(await template_history(store))
    overrides = {n: v.source for n, v in latest.items() if v.source is not None}
    return TemplateSet.of(overrides, WORKSPACE_LABEL) if overrides else INSTALLED


def _check(name: str, source: str | None) -> None:
    known = validator_template_names()
    if name not in known:
        raise InvalidRequest(f"no validator template {name!r} (templates: {', '.join(known)})")
    if source is None:
        return
    if len(source) > MAX_TEMPLATE_CHARS:
        raise InvalidRequest(f"{name}: a template of {len(source)} characters is over {MAX_TEMPLATE_CHARS}")
    import jinja2

    try:
        jinja2.Environment().parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise InvalidRequest(f"{name}: not a valid template (line {exc.lineno}: {exc.message})") from None


async def save_template(
    store: Store, name: str, source: str | None, *, reviewer: str, note: str = ""
) -> TemplateVersion:
    """Save a new version of ``name`` (``source`` None: back to the installed one).

    A template that does not parse, an unknown name, or a save that changes nothing is refused
    and nothing is written.
    """
    _check(name, source)
    history = await template_history(store, name)
    current = history[-1] if history else None
    current_source = current.source if current is not None else None
    if source == current_source or (source is None and current is None):
        raise InvalidRequest(f"{name}: unchanged, nothing saved")
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest() if source is not None else None
    version = (current.version if current is not None else 0) + 1
    payload = ValidatorTemplateSave(
        name=name, version=version, sha256=digest, reviewer=reviewer, note=note, removed=source is None
    )
    session_id = await judge_session(store, create=True)
    assert session_id is not None
    ev = await store.append_event(session_id, *encode(payload), content=source)
    return TemplateVersion(name, version, digest, reviewer, note, source is None, source, ev.created_at)


async def template_text(
    store: Store, name: str, version: int | None = None, *, installed: bool = False
) -> str:
    """A template's text: the workspace's current (or numbered) version, or the installed one."""
    _check(name, None)
    if installed:
        return template_source(name)
    history = await template_history(store, name)
    if version is not None:
        found = [v for v in history if v.version == version]
        if not found:
            raise InvalidRequest(
                f"{name} has no version {version} (versions: {[v.version for v in history]})"
            )
        return found[0].source if found[0].source is not None else template_source(name)
    if history and history[-1].source is not None:
        return history[-1].source
    return template_source(name)


async def template_diff(store: Store, name: str, a: int | None = None, b: int | None = None) -> str:
    """A unified diff between two versions (0 or None for ``a``: the installed template; None for
    ``b``: the current one)."""
    before = await template_text(store, name, a, installed=not a)
    after = await template_text(store, name, b)
    label_a = f"{name} (installed)" if not a else f"{name} v{a}"
    label_b = f"{name} (workspace)" if b is None else f"{name} v{b}"
    return "".join(
        difflib.unified_diff(
            before.splitlines(True), after.splitlines(True), fromfile=label_a, tofile=label_b
        )
    )


@dataclass(frozen=True, slots=True)
class TemplateState:
    """One validator template as the workspace renders it, beside the installed text it overrides."""

    name: str
    text: str  # what verdicts render with now
    installed: str
    latest: TemplateVersion | None  # the latest saved version; None: never saved here

    @property
    def own(self) -> bool:
        """The workspace's own text is in use (a save that went back to the installed one is not)."""
        return self.latest is not None and not self.latest.removed


async def template_states(store: Store) -> list[TemplateState]:
    """Every validator template, in the installed order: one read of the history for all of them."""
    latest = _latest(await template_history(store))
    out = []
    for name in validator_template_names():
        installed = template_source(name)
        v = latest.get(name)
        text = v.source if v is not None and v.source is not None else installed
        out.append(TemplateState(name, text, installed, v))
    return out


def diff_text(name: str, before: str, after: str) -> str:
    """A unified diff of ``after`` against the installed ``before`` (empty when they are the same)."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(True),
            after.splitlines(True),
            fromfile=f"{name} (installed)",
            tofile=f"{name} (workspace)",
        )
    )
