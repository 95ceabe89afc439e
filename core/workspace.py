"""The core's composition root: one object holding what every service needs.

The desk, the command line and tests each open a ``Workspace`` and hand it to the services, so
no service reaches for globals and two workspaces can live in one process (the desk opening a
case bundle next to the live workspace). The part every run needs is built here once, as the
``RunContext`` the agent loop, the team scheduler and validation receive.

That context (the LLM gateway with httpx, the tool registry) is built on first use: the desk's
queue needs only the store and the bus, and its first paint should not wait for the rest.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from core.config import APP_NAME, Settings
from core.domain.facts import VerdictWarning, WarningCode
from core.errors import ConfigurationError, StoreError
from core.events import EventBus
from core.store import Store

if TYPE_CHECKING:
    from core.llm import LLMGateway
    from core.runtime import RunContext
    from core.store.watch import ChangeWatcher
    from core.tools.corpus import Corpus
    from core.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


DEMO_FILE = "demo.sqlite3"


def demo_db_url(db_url: str) -> str:
    """The demo's own workspace: ``demo.sqlite3`` beside the analyst's SQLite file (in the user
    data folder when the analyst's workspace is a server database).

    The demo's sample tasks once went into the analyst's own workspace, mixed with real work in
    the queue, the search, the calibration figures and every export.
    """
    from core.store import normalise_url, sqlite_path

    path = sqlite_path(normalise_url(db_url))
    folder = path.parent if path is not None else Path(platformdirs.user_data_dir(APP_NAME))
    return f"sqlite+aiosqlite:///{folder / DEMO_FILE}"


def is_demo_workspace(db_url: str) -> bool:
    """Whether ``db_url`` is a demo workspace (a SQLite file named ``demo.sqlite3``)."""
    from core.store import normalise_url, sqlite_path

    path = sqlite_path(normalise_url(db_url))
    return path is not None and path.name == DEMO_FILE


def workspace_file(db_url: str) -> Path | None:
    """The SQLite file ``db_url`` names (a path or a URL), or None for a server database."""
    from core.store import normalise_url, sqlite_path

    return sqlite_path(normalise_url(db_url))


def shareable_name(db_url: str) -> str | None:
    """``db_url`` as it may be written down (a recent-workspaces list): its file path, or the
    server URL when it carries no password; None for a URL with a password or one that cannot
    be parsed (never written anywhere)."""
    from sqlalchemy.engine import make_url

    from core.errors import EvidenceDeskError
    from core.store import normalise_url, sqlite_path

    try:
        url = normalise_url(db_url)
    except EvidenceDeskError:
        return None
    path = sqlite_path(url)
    if path is not None:
        return str(path)
    return url if make_url(url).password is None else None


def missing_workspace(db_url: str) -> Path | None:
    """The SQLite file ``db_url`` names when it does not exist yet, else None (it exists, or the
    workspace is a server database, which the store reports on itself).

    Opening a workspace creates it; a mistyped ``--db`` path silently made a new, empty one, and
    the analyst's tasks seemed gone. A path named on purpose is created only when asked.
    """
    from core.store import normalise_url, sqlite_path

    path = sqlite_path(normalise_url(db_url))
    if path is None or str(path).startswith("file:") or path.exists() or path.is_symlink():
        return None  # a server, an SQLite URI filename (``file:...?mode=ro``), or there it is
    existing = next((p for p in path.parents if p.exists()), None)
    if existing is not None and not existing.is_dir():
        return None  # under a regular file: the store says so ("not a folder"), creating cannot help
    return path


def corpus_index_path(folder: Path) -> Path:
    """Index files live in the user cache, never inside the (possibly read-only) documents folder."""
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir(APP_NAME)) / f"corpus-{digest}.sqlite3"


def open_corpus(folder: Path) -> Corpus:
    from core.tools.corpus import Corpus

    index = corpus_index_path(folder)
    index.parent.mkdir(parents=True, exist_ok=True)
    return Corpus(folder, index)


class Workspace:
    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        gateway: LLMGateway | None = None,
        tools: ToolRegistry | None = None,
        bus: EventBus,
        corpus: Corpus | None,
        corpus_folder: Path | None = None,
    ) -> None:
        """``gateway`` and ``tools`` left out are built from ``settings`` when a run first needs them;
        so is the corpus of ``corpus_folder`` when no ``corpus`` is given (its module loads httpx)."""
        self._settings = settings
        self._store = store
        self._bus = bus
        self._gateway = gateway
        self._tools = tools
        self._corpus = corpus
        self._corpus_folder = corpus_folder if corpus is None else None

    @functools.cached_property
    def corpus(self) -> Corpus | None:
        corpus = self._corpus
        if corpus is None and self._corpus_folder is not None:
            corpus = open_corpus(self._corpus_folder)
        if corpus is not None and self._tools is None:
            # What the built-in tools would set: the cap must hold for what they read.
            corpus.max_document_bytes = self._settings.corpus_max_document_bytes
        return corpus

    @functools.cached_property
    def context(self) -> RunContext:
        """Built once, on first use: what a run is handed and what a service reads here are the
        same objects (the parts below are read through it once it exists)."""
        from core.llm import LLMGateway
        from core.runtime import RunContext
        from core.tools.builtin import build_default_registry

        gateway = self._gateway if self._gateway is not None else LLMGateway(self._settings)
        tools = (
            self._tools if self._tools is not None else build_default_registry(self._settings, self.corpus)
        )
        return RunContext(
            store=self._store, gateway=gateway, tools=tools, settings=self._settings, bus=self._bus
        )

    @property
    def settings(self) -> Settings:
        return self._settings

    def apply_settings(self, settings: Settings) -> None:
        """Use ``settings`` from the next call on, without reopening the workspace (the desk's Save).

        The run context (gateway, tools, corpus) is rebuilt from them on its next use; a run already
        going keeps the objects it holds for its current step, and its later steps (a validation
        after the agent's answer) read the new ones. The database cannot change under an open
        workspace: a different ``db_url`` is refused. A gateway or tools handed in when this
        workspace was built (tests, the demo) are kept as they are.
        """
        if settings.db_url != self._settings.db_url:
            raise ConfigurationError(
                "the workspace database cannot change while it is open; restart the desk"
            )
        if settings.script is not None:
            from core.llm.scripted import load_script

            load_script(settings.script)  # a broken script is refused here, as at start
        if self._corpus is None and settings.corpus != self._settings.corpus:  # handed-in corpora stay
            self.__dict__.pop("corpus", None)
            self._corpus_folder = settings.corpus
        self._settings = settings
        self.__dict__.pop("context", None)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def gateway(self) -> LLMGateway:
        return self.context.gateway

    @property
    def tools(self) -> ToolRegistry:
        return self.context.tools

    @property
    def bus(self) -> EventBus:
        return self._bus

    @property
    def context_started(self) -> bool:
        """Whether the run context (gateway, tools) exists yet: the desk's start leaves it unbuilt."""
        return "context" in self.__dict__

    @classmethod
    async def open(
        cls, settings: Settings, *, bus: EventBus | None = None, gateway: LLMGateway | None = None
    ) -> Workspace:
        if settings.script is not None:
            from core.llm.scripted import load_script

            # A broken script is a configuration error at start, before anything is written.
            load_script(settings.script)
        store = await Store.open(settings.db_url)
        try:
            # The texts of an import whose process was killed go at the next start (one log line).
            await store.release_dead_imports()
        except StoreError:  # never a reason not to open: the next import sweeps again
            log.warning("could not release the content of an interrupted import", exc_info=True)
        return cls(
            settings=settings,
            store=store,
            gateway=gateway,
            bus=bus or EventBus(),
            corpus=None,
            corpus_folder=settings.corpus,
        )

    @property
    def display_name(self) -> str:
        """The workspace as people name it: a file path, or a database URL without its password."""
        return self.store.display_name

    async def watch_changes(self) -> ChangeWatcher:
        """Announce other processes' task writes on this workspace's bus until the watcher closes."""
        from core.store.watch import ChangeWatcher

        watcher = ChangeWatcher(self.store, self.bus)
        await watcher.start()
        return watcher

    def configuration_warnings(self) -> list[VerdictWarning]:
        """Warnings true of every task this configuration runs (shown once, not per task)."""
        from core.llm.families import model_family, same_family

        s = self.settings
        if same_family(s.validator_model, s.agent_model):
            return [
                VerdictWarning(
                    code=WarningCode.SAME_FAMILY_VALIDATOR,
                    message=f"validator {s.validator_model} and agent {s.agent_model} are both from the "
                    f"{model_family(s.validator_model)} family; judges tend to favour answers from their own family",
                )
            ]
        return []

    @staticmethod
    def warm_up_models() -> None:
        """Pay litellm's import cost early; blocking, so a caller with a UI runs it in a worker."""
        from core.llm.gateway import warm_up_litellm

        warm_up_litellm()

    async def close(self) -> None:
        await self.store.close()
