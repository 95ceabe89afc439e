"""Output schemas are self-contained: every $ref resolves up front, and nothing is ever fetched."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from core.errors import ConfigurationError
from core.llm.structured import check_structured, validate_schema


@pytest.fixture
def loopback_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that records every request it gets."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_remote_ref_is_refused_without_a_request(loopback_server: tuple[str, list[str]]) -> None:
    base, seen = loopback_server
    schema = {"type": "object", "properties": {"a": {"$ref": f"{base}/int.json"}}}
    with pytest.raises(ConfigurationError, match="remote references are never fetched"):
        validate_schema(schema)
    _, problem = check_structured('{"a": 1}', schema)  # answer time: refused, never fetched
    assert problem is not None and "never fetched" in problem[1]
    assert seen == []


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"properties": {"a": {"$ref": "#/definitions/nope"}}}, "'#/definitions/nope' cannot be resolved"),
        ({"$defs": {"x": {"$ref": "#/$defs/missing"}}}, "'#/$defs/missing' cannot be resolved"),
        ({"items": {"$ref": "sibling.json"}}, "'sibling.json'"),
        ({"$ref": "#"}, "endless loop"),
        (
            {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
            "endless loop",
        ),
    ],
)
def test_unusable_refs_are_named_up_front(schema: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid output JSON schema") as caught:
        validate_schema(schema)
    assert words in str(caught.value)


def test_local_and_recursive_refs_still_work() -> None:
    schema = {
        "$id": "https://example.com/answer",
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "properties": {
            "n": {"$ref": "#/$defs/node"},
            "m": {"$ref": "https://example.com/answer#/$defs/node"},
        },
    }
    validate_schema(schema)
    value, problem = check_structured('{"n": {"next": {"next": {}}}}', schema)
    assert problem is None and value["n"]["next"]["next"] == {}
    _, problem = check_structured('{"n": {"next": 3}}', schema)
    assert problem is not None and problem[0] == "schema-validate"


def test_unresolvable_ref_at_answer_time_is_a_schema_failure_not_a_crash() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/gone"}}}
    _, problem = check_structured('{"a": 1}', schema)
    assert problem is not None and "cannot be resolved" in problem[1]
