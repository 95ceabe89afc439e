"""A private D-Bus session bus with GNOME Keyring's Secret Service on it, for one test session.

``dbus-run-session`` starts the bus and runs a shell on it that starts ``gnome-keyring-daemon
--unlock --components=secrets`` with a password on its stdin: the daemon creates the ``login``
collection (the ``default`` alias) unlocked, so no prompt is ever needed. ``--unlock`` returns only
once the daemon is up, and then the shell prints the bus address: that line is the readiness
signal (nothing is polled). The shell then waits on its stdin; closing it ends the shell, so
``dbus-run-session`` stops the bus, and the daemon, whose bus is gone, exits too.

Every folder the daemon writes (its keyrings, its control socket) is under a temporary ``HOME``:
nobody's real keyring is read or written.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 60  # bounds a hang only
SERVICE = "org.freedesktop.secrets"
_SCRIPT = (
    'printf %s "$EVIDENCE_DESK_TEST_KEYRING_PASSWORD" | "$EVIDENCE_DESK_TEST_KEYRING_DAEMON" '
    "--unlock --components=secrets >/dev/null || exit 1; "
    'printf "%s\\n" "$DBUS_SESSION_BUS_ADDRESS"; exec cat >/dev/null'
)


@dataclass
class SecretServiceSession:
    """The bus address to talk to, once ``start`` returned; ``stop`` ends bus and daemon."""

    tools: dict[str, str]
    home: Path
    address: str = ""
    _process: subprocess.Popen[str] | None = field(default=None, repr=False)

    def start(self) -> None:
        run = self.home / "run"
        run.mkdir(parents=True, exist_ok=True)
        run.chmod(0o700)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(run),
            "XDG_DATA_HOME": str(self.home / "data"),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_CACHE_HOME": str(self.home / "cache"),
            "LD_LIBRARY_PATH": self.tools.get("ld_library_path", ""),
            "EVIDENCE_DESK_TEST_KEYRING_DAEMON": self.tools["daemon"],
            "EVIDENCE_DESK_TEST_KEYRING_PASSWORD": "test-collection-password",
        }
        argv = [self.tools["dbus_run_session"]]
        if self.tools.get("dbus_config"):
            argv += [
                f"--config-file={self.tools['dbus_config']}",
                f"--dbus-daemon={self.tools['dbus_daemon']}",
            ]
        argv += ["--", "sh", "-c", _SCRIPT]
        with (self.home / "session.log").open("w") as log:  # the child keeps its own copy
            self._process = subprocess.Popen(
                argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
            )
        assert self._process.stdout is not None
        hang = threading.Timer(START_TIMEOUT_S, self._process.kill)  # bounds a hang only
        hang.start()
        try:
            line = self._process.stdout.readline().strip()  # once the daemon is up, or EOF on failure
        finally:
            hang.cancel()
        if not line.startswith("unix:"):
            self.stop()
            log = (self.home / "session.log").read_text(errors="replace")
            raise RuntimeError(f"the Secret Service did not start: {log.strip()[-500:]}")
        self.address = line
        if not self._wait_for_service():
            self.stop()
            log = (self.home / "session.log").read_text(errors="replace")
            raise RuntimeError(f"the Secret Service never took its bus name: {log.strip()[-500:]}")

    def _wait_for_service(self) -> bool:
        """Until the daemon owns ``org.freedesktop.secrets``: ``--unlock`` may return before it does.

        Subscribed to the bus's NameOwnerChanged before asking, so the signal cannot slip between
        the question and the wait; the timeout bounds a daemon that died only.
        """
        from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        with open_dbus_connection(bus=self.address) as connection:
            rule = MatchRule(
                type="signal",
                interface="org.freedesktop.DBus",
                member="NameOwnerChanged",
                path="/org/freedesktop/DBus",
            )
            rule.add_arg_condition(0, SERVICE)
            connection.send_and_get_reply(message_bus.AddMatch(rule))
            with connection.filter(rule) as changes:
                bus = DBusAddress(
                    "/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus"
                )
                owned = connection.send_and_get_reply(new_method_call(bus, "NameHasOwner", "s", (SERVICE,)))
                if owned.body[0]:
                    return True
                try:
                    while True:
                        signal = connection.recv_until_filtered(changes, timeout=START_TIMEOUT_S)
                        if signal.body[2]:  # the new owner
                            return True
                except TimeoutError:
                    return False

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # ends the shell's `cat`, so the bus and then the daemon
        try:
            process.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
