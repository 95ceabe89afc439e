"""Error types every layer shares.

The command line maps these to exit codes (3 refused, 4 configuration/input) and prints their
message as one line, so messages must make sense without a traceback.
"""

from __future__ import annotations


class EvidenceDeskError(Exception):
    """Base of every error the product reports to a person."""


class ConfigurationError(EvidenceDeskError):
    """A setting, script or file the user supplied cannot be used."""


class StoreError(EvidenceDeskError):
    """The workspace database cannot be opened or used as asked."""


class DatabaseUnreachable(StoreError):
    """The workspace's database server went away or cannot be reached now; it may come back.

    Apart from ``StoreError`` because nothing about the request is wrong: a worker waits and
    retries, a run stops without recording a failure (there is nowhere to record it), and the task
    is resumed once the server answers again.
    """


class RefusedAction(EvidenceDeskError):
    """A legal request the current state refuses (stale version, wrong status)."""


class VersionConflict(RefusedAction):
    """Someone else changed the task since it was read."""


class InputError(ConfigurationError):
    """A file the user handed over (script, schema, template, rules) is unusable as given."""


class InvalidRequest(EvidenceDeskError, ValueError):
    """A request that names what the workspace does not have, or a value it does not accept.

    No attempt 3 on a two-attempt task, an unknown status, an unreadable date. Still a
    ``ValueError`` so callers that check arguments the standard way (the desk's dialogs) keep
    working, and an ``EvidenceDeskError`` so the command line reports it as bad input (exit 4).
    """
