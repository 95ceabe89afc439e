"""No output schema can hang a run, and JSON means JSON.

A backtracking ``pattern`` once kept a run busy for minutes (``^(a+)+$`` against 32 ``a``s and a
``!``). The checks run in a child process so that a regression hangs the child, not the suite: the
child's ``timeout`` is only a bound on a hang; no assertion depends on how long anything took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.llm.structured import check_structured

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
from core.llm.structured import check_structured
for pattern, value in json.loads(sys.argv[1]):
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    print(json.dumps(check_structured(json.dumps({"v": value}), schema)[1]))
"""


def test_backtracking_patterns_end_in_a_clear_schema_error() -> None:
    cases = [["^(a+)+$", "a" * 32 + "!"], ["^(a|a)*$", "a" * 40 + "!"]]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(cases)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,  # bounds a regression's hang only
        check=False,
    )
    assert done.returncode == 0, done.stderr
    linear, costly = (json.loads(line) for line in done.stdout.splitlines())
    assert linear[0] == "schema-validate" and "does not match" in linear[1]
    assert costly[0] == "schema-validate" and "pattern '^(a|a)*$' took over" in costly[1]


def test_nan_and_infinity_are_not_json_numbers() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "number"}}}
    for text in ("NaN", "Infinity", "-Infinity"):
        value, problem = check_structured(f'{{"v": {text}}}', schema)
        assert value is None and problem is not None
        assert problem[0] == "json-parse" and "is not a JSON number" in problem[1], problem
    assert check_structured('{"v": 1.5e3}', schema) == ({"v": 1500.0}, None)
