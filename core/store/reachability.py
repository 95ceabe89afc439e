"""Telling "the database server is gone for now" apart from "the database refused this request".

A restart (``pg_ctl restart``), a stopped server, a dropped network or a share that disappeared
cut every connection; what the driver then raises depends on the moment: asyncpg's
``ConnectionDoesNotExistError`` mid-query, ``AdminShutdownError`` (57P01) when the server
terminates the session, ``CannotConnectNowError`` (57P03) while it starts or stops, a plain
``ConnectionRefusedError`` when nothing listens, psycopg's ``OperationalError`` under procrastinate
(wrapped in its ``ConnectorException``). Workers and watchers wait and reconnect on these, and only
these: a constraint violation or a bug must still fail loudly.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from core.errors import DatabaseUnreachable, EvidenceDeskError, StoreError

# SQLSTATE class 08 (connection exception); 57P01-57P03: the server is shutting down or starting.
_LOST_STATES = ("57P01", "57P02", "57P03")
_LOST_WORDS = (
    "connection is closed",
    "connection was closed",
    "server closed the connection",
    "terminating connection",
)
_CHAIN_LIMIT = 12
BACKOFF_FIRST_S = 0.5
BACKOFF_CAP_S = 30.0


def is_connection_lost(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) says the server cannot be reached, not that it refused.

    The walk stops at an error our own code already classified as something else (a model
    provider's connection error is an ``LLMError``, not the database going away).
    """
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < _CHAIN_LIMIT:
        seen += 1
        if isinstance(current, DatabaseUnreachable):
            return True
        if isinstance(current, EvidenceDeskError) and not isinstance(current, StoreError):
            return False
        if _says_lost(current):
            return True
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else (current.__cause__ or current.__context__)
    return False


def _says_lost(exc: BaseException) -> bool:
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, (ConnectionError, socket.gaierror)):
        return True
    state = str(getattr(exc, "sqlstate", "") or "")
    if state.startswith("08") or state in _LOST_STATES:
        return True
    kind = type(exc)
    if kind.__module__.startswith("psycopg") and kind.__name__ in ("OperationalError", "PoolTimeout"):
        return True
    if kind.__module__.startswith("asyncpg") and kind.__name__ in (
        "ConnectionDoesNotExistError",
        "InterfaceError",
        "InternalClientError",
    ):
        return (
            any(word in str(exc).lower() for word in _LOST_WORDS)
            or kind.__name__ == "ConnectionDoesNotExistError"
        )
    return (
        isinstance(exc, OSError)
        and exc.errno is not None
        and kind is not FileNotFoundError
        and _network_errno(exc)
    )


def _network_errno(exc: OSError) -> bool:
    import errno

    return exc.errno in {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ETIMEDOUT,
        errno.EPIPE,
    }


@dataclass
class Backoff:
    """Exponential delays from ``first_s`` doubling up to ``cap_s``, each drawn in its upper half
    ("equal jitter"): never zero, so a down server is not hammered, never above the cap."""

    first_s: float = BACKOFF_FIRST_S
    cap_s: float = BACKOFF_CAP_S
    rng: Callable[[], float] = random.random
    tries: int = 0

    def next_delay(self) -> float:
        ceiling = min(self.cap_s, self.first_s * 2 ** min(self.tries, 32))
        self.tries += 1
        return float(ceiling / 2 + self.rng() * ceiling / 2)

    def reset(self) -> None:
        self.tries = 0


async def probe(engine: AsyncEngine) -> BaseException | None:
    """One round trip on a fresh pooled connection; the error that says the server is away, or None.

    Any other error (a refused login, a dropped database) is raised: waiting would not cure it.
    """
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        if is_connection_lost(exc) or isinstance(exc, (OSError, TimeoutError)):
            return exc
        raise
    return None


__all__ = ["BACKOFF_CAP_S", "BACKOFF_FIRST_S", "Backoff", "is_connection_lost", "probe"]
