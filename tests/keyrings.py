"""A keyring for tests: signing keys and API keys made in a test never reach the OS keyring."""

from __future__ import annotations

from keyring.backend import KeyringBackend


class MemoryKeyring(KeyringBackend):
    """A keyring that lives and dies with one test."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


class DroppingKeyring(MemoryKeyring):
    """A keyring that accepts every write and keeps none (some misconfigured desktop services)."""

    def set_password(self, service: str, username: str, password: str) -> None:
        return None
