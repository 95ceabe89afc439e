"""The core's composition root: one object holding what every service needs.

The desk, the command line and tests each open a ``Workspace`` and hand it to the services, so
no service reaches for globals and two workspaces can live in one process (the desk opening a
case bundle next to the live workspace). The part every run needs is built here once, as the
``RunContext`` the agent loop, the team scheduler and validation receive.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import platformdirs

from core.config import APP_NAME, Settings
from core.domain.facts import VerdictWarning, WarningCode
from core.events import EventBus
from core.llm import LLMGateway
from core.llm.scripted import load_script
from core.runtime import RunContext
from core.store import Store
from core.store.watch import ChangeWatcher
from core.tools.builtin import build_default_registry
from core.tools.corpus import Corpus
from core.tools.registry import ToolRegistry


def corpus_index_path(folder: Path) -> Path:
    """Index files live in the user cache, never inside the (possibly read-only) documents folder."""
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir(APP_NAME)) / f"corpus-{digest}.sqlite3"


def open_corpus(folder: Path) -> Corpus:
    index = corpus_index_path(folder)
    index.parent.mkdir(parents=True, exist_ok=True)
    return Corpus(folder, index)


class Workspace:
    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        gateway: LLMGateway,
        tools: ToolRegistry,
        bus: EventBus,
        corpus: Corpus | None,
    ) -> None:
        self.context = RunContext(store=store, gateway=gateway, tools=tools, settings=settings, bus=bus)
        self.corpus = corpus

    # The parts are read through the context, so what a run is handed and what a service reads
    # here can never be two different objects.
    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def store(self) -> Store:
        return self.context.store

    @property
    def gateway(self) -> LLMGateway:
        return self.context.gateway

    @property
    def tools(self) -> ToolRegistry:
        return self.context.tools

    @property
    def bus(self) -> EventBus:
        return self.context.bus

    @classmethod
    async def open(
        cls, settings: Settings, *, bus: EventBus | None = None, gateway: LLMGateway | None = None
    ) -> Workspace:
        if settings.script is not None:
            # A broken script is a configuration error at start, before anything is written.
            load_script(settings.script)
        store = await Store.open(settings.db_url)
        corpus = open_corpus(settings.corpus) if settings.corpus is not None else None
        return cls(
            settings=settings,
            store=store,
            gateway=gateway or LLMGateway(settings),
            tools=build_default_registry(settings, corpus),
            bus=bus or EventBus(),
            corpus=corpus,
        )

    @property
    def display_name(self) -> str:
        """The workspace as people name it: a file path, or a database URL without its password."""
        return self.store.display_name

    async def watch_changes(self) -> ChangeWatcher:
        """Announce other processes' task writes on this workspace's bus until the watcher closes."""
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
