"""The README's "Team workspace" runbook, the commands of it that can run here, against a server set
up as the runbook says: its own ``pg_hba.conf`` letting the desk role in only over TLS with a
SCRAM password, a certificate for ``localhost`` signed by a CA of our own, a role and a database
made with ``createuser --pwprompt``/``createdb -O``, the password in a ``PGPASSFILE`` (never the URL),
the URL with ``sslmode=verify-full`` and ``sslrootcert``; then ``batch``, a worker, ``batches`` and a
``pg_dump`` backup as that role. A server that trusted every login (the other tests' server) would
prove nothing about passwords or TLS."""

from __future__ import annotations

import datetime
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy.engine import make_url

from core.cli.main import main as cli_main
from tests.pg import PgServer, PgUnavailable, ServerSecurity, start_server
from tests.team.conftest import sync_rows, worker_process, write_script

ROLE, PASSWORD = "desk", "runbook-Secret-1"
# the fixtures' superuser keeps its trust line (admin connections); the desk role: TLS and SCRAM only
HBA = (
    "host all evidence_test 127.0.0.1/32 trust\n"
    f"hostssl all {ROLE} 127.0.0.1/32 scram-sha-256\n"
    f"hostssl all {ROLE} ::1/128 scram-sha-256\n"
)


def _ca(folder: Path, name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    (folder / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def make_certificates(folder: Path) -> None:
    """``ca.crt``, ``server.crt``/``server.key`` for ``localhost`` signed by it, and ``other.crt``, a
    CA that signed nothing (what ``verify-full`` must refuse)."""
    ca, ca_key = _ca(folder, "ca")
    _ca(folder, "other")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "server.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "server.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


@pytest.fixture
def secure_server(tmp_path: Path) -> Iterator[tuple[PgServer, Path]]:
    """A private cluster of its own: the session's server trusts every login, this one does not."""
    certs = tmp_path / "tls"
    certs.mkdir()
    make_certificates(certs)
    try:
        with start_server(ServerSecurity(HBA, (certs / "server.crt", certs / "server.key"))) as server:
            yield server, certs
    except PgUnavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")


@pytest.mark.slow
def test_the_runbook_with_a_password_and_tls_verify_full(
    secure_server: tuple[PgServer, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, certs = secure_server
    assert server.control is not None
    bindir = Path(server.control.pg_ctl[server.control.pg_ctl.index("--pgdata") - 1]).parent
    admin = make_url(server.admin_url)
    conn = ["-h", str(admin.host), "-p", str(admin.port), "-U", str(admin.username)]
    env = {**os.environ, "PGPASSWORD": "", "PGSSLMODE": "disable"}
    password = f"{PASSWORD}\n{PASSWORD}\n"  # what --pwprompt asks for, twice
    subprocess.run(
        [str(bindir / "createuser"), *conn, "--pwprompt", ROLE], input=password.encode(), env=env, check=True
    )
    subprocess.run([str(bindir / "createdb"), *conn, "-O", ROLE, "evidence"], check=True, env=env)

    passfile = tmp_path / "pgpass"
    passfile.write_text(f"localhost:{admin.port}:evidence:{ROLE}:not-{PASSWORD}\n", encoding="utf-8")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    base = f"postgresql://{ROLE}@localhost:{admin.port}/evidence?sslmode=verify-full&sslrootcert="
    url = base + str(certs / "ca.crt")
    script = write_script(tmp_path / "script.json")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"text": "Runbook question?"}\n', encoding="utf-8")

    # the server checks the password (it trusts no one) ...
    assert cli_main(["batch", str(rows), "--db", url, "--script", str(script)]) != 0
    assert "password authentication failed" in capsys.readouterr().err
    passfile.write_text(f"localhost:{admin.port}:evidence:{ROLE}:{PASSWORD}\n", encoding="utf-8")
    # ... and the client the certificate: one no trusted CA signed is refused, with a line saying so
    assert (
        cli_main(["batch", str(rows), "--db", base + str(certs / "other.crt"), "--script", str(script)]) != 0
    )
    assert "certificate verify failed" in capsys.readouterr().err

    assert cli_main(["batch", str(rows), "--db", url, "--script", str(script)]) == 0
    worker = worker_process(url, script, "--once", PGPASSFILE=str(passfile))
    _, err = worker.communicate(timeout=300)
    assert worker.returncode == 0, err.decode()
    assert cli_main(["batches", "--db", url]) == 0
    assert sync_rows(url, "select status from tasks") == [("awaiting_feedback",)]
    assert sync_rows(url, "select ssl from pg_stat_ssl where pid = pg_backend_pid()") == [(True,)]

    dump = tmp_path / "evidence.dump"
    subprocess.run([str(bindir / "pg_dump"), "-Fc", "-d", url, "-f", str(dump)], check=True)
    listing = subprocess.run([str(bindir / "pg_restore"), "-l", str(dump)], check=True, capture_output=True)
    assert b"procrastinate_jobs" in listing.stdout and b"TABLE DATA public tasks" in listing.stdout
