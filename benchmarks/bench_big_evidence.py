"""Big evidence in one task: store, re-open, show, plan, export and verify, time and peak memory.

Each step runs in its own child process and its peak RSS is that child's own ``ru_maxrss`` (read
with ``os.wait4``), so one step's memory never hides in another's. The tool results are written
through the event log's real insert path (``append_events``), and the packet through the real
packet builder and ``update_attempt``, as a run's are; a tool result is at most 256 MiB, several
of them make up the size.

Steps: ``store`` (events + packet, chunked as they are written), ``reopen`` (a fresh process reads
the packet index and streams every tool result back, checking its sha256), ``show`` (the CLI, text
to /dev/null), ``plan`` (chunk planning of the validator's prompts from the packet index, twice: the
second plan uses the token counts cached per stored chunk; coverage is checked independently from
the planned prompts' character ranges against each stored item's length), ``validate`` (the real
``ValidationService`` in chunked mode against the scripted validator, with a window of
``--window`` tokens; coverage is measured independently of the validator's report: the text of
each item inside the fences of the prompts the provider received is hashed in order and compared
with the sha256 of what was stored), ``export`` and ``verify`` (the CLI). Figures are printed as
one JSON line per size.

Steps after ``store`` and ``reopen`` are the ``STEPS`` list: a module adds one with
``STEPS.append(Step(name, run))`` (and, for a child process of its own, ``CHILD_STEPS[name] = fn``).

Run: ``.venv/bin/python benchmarks/bench_big_evidence.py [--sizes 8M,32M] [--keep]``; the issue's
sizes are ``--sizes 100M,1G,2G``. The workspace lives in a temporary folder deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._big_desk import desk_step
from benchmarks._common import scratch_dir

ROOT = Path(__file__).resolve().parents[1]
PIECE = 256 * 1024 * 1024
UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}
WORDS = [
    "tide",
    "moon",
    "ocean",
    "trench",
    "depth",
    "pressure",
    "light",
    "speed",
    "vacuum",
    "summit",
    "wall",
    "dynasty",
    "venus",
    "gear",
    "stone",
]


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def make_text(size: int, seed: int) -> str:
    """Prose-like ASCII lines, each numbered, so no two chunks are equal (dedup must not flatter)."""
    line_words = [
        " ".join(WORDS[(i * 7 + seed) % len(WORDS) :] + WORDS[: (i * 7 + seed) % len(WORDS)])
        for i in range(97)
    ]
    lines: list[str] = []
    total = 0
    i = 0
    while total < size:
        line = f"{seed:03d}-{i:012d} {line_words[i % 97]}\n"
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines)[:size]


def pieces_of(size: int) -> list[int]:
    return [min(PIECE, size - start) for start in range(0, size, PIECE)]


async def step_store(db: str, size: int) -> dict[str, Any]:
    from core.store import NewEvent, Store
    from core.team.packet import build_attempt_packet

    store = await Store.open(db)
    task = await store.create_task(f"big evidence {size} bytes")
    assert task.main_session_id is not None
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
    run = await store.create_run(
        session_id=task.main_session_id,
        kind="agent",
        model="scripted/agent",
        task_id=task.id,
        attempt_id=attempt.id,
    )
    await store.append_events(
        task.main_session_id, [NewEvent(kind="run_started", payload={})], run_id=run.id, task_id=task.id
    )
    spent = 0.0
    digests: list[str] = []
    for n, piece in enumerate(pieces_of(size)):
        text = make_text(piece, n)
        digests.append(hashlib.sha256(text.encode()).hexdigest())
        started = time.perf_counter()
        await store.append_events(
            task.main_session_id,
            [
                NewEvent(
                    kind="tool_result_recorded",
                    payload={"tool_name": "big", "tool_call_id": f"c{n}"},
                    content=text,
                ),
            ],
            run_id=run.id,
            task_id=task.id,
        )
        spent += time.perf_counter() - started
        del text
    started = time.perf_counter()
    await store.append_events(
        task.main_session_id,
        [NewEvent(kind="run_finished", payload={"finish_reason": "stop", "output_text": "done [E1]"})],
        run_id=run.id,
        task_id=task.id,
    )
    packet = await build_attempt_packet(
        store,
        task_id=task.id,
        attempt_index=1,
        main_session_id=task.main_session_id,
        main_run_id=run.id,
        final_output="done [E1]",
    )
    await store.update_attempt(
        attempt.id, state="finished", final_output="done [E1]", packet=packet.model_dump(mode="json")
    )
    spent += time.perf_counter() - started
    await store.close()
    return {"task_id": task.id, "attempt_id": attempt.id, "seconds": spent, "digests": digests}


async def step_reopen(db: str, attempt_id: str, digests: list[str]) -> dict[str, Any]:
    from sqlalchemy import func, select

    from core.evidence.content import iter_item_text, load_packet
    from core.store import Store
    from core.store.models import AttemptRow, ContentChunkRow, EventRow

    started = time.perf_counter()
    store = await Store.open(db)
    packet = await load_packet(store, attempt_id)
    assert packet is not None and packet.main_run is not None
    found = []
    for tool in packet.main_run.tool_results:
        h = hashlib.sha256()
        async for piece in iter_item_text(store, tool):
            h.update(piece.encode())
        found.append(h.hexdigest())
    seconds = time.perf_counter() - started
    async with store.read_session() as s:
        largest = {
            "chunk_bytes": await s.scalar(select(func.max(func.length(ContentChunkRow.data)))),
            "event_content_chars": await s.scalar(select(func.max(func.length(EventRow.content)))),
            "packet_json_chars": len(
                json.dumps(await s.scalar(select(AttemptRow.packet).where(AttemptRow.id == attempt_id)))
            ),
        }
    await store.close()
    return {"seconds": seconds, "intact": found == digests, "largest_value": largest}


async def step_plan(db: str, attempt_id: str) -> dict[str, Any]:
    import litellm

    from core.evidence.content import item_length, load_packet
    from core.evidence.render import render_packet
    from core.store import Store
    from core.validation.chunking import plan_chunks_cached

    store = await Store.open(db)
    packet = await load_packet(store, attempt_id)
    assert packet is not None
    items = render_packet(packet).items
    calls = {"n": 0, "chars": 0}

    def count(text: str) -> int:
        calls["n"] += 1
        calls["chars"] += len(text)
        return int(litellm.token_counter(model="gpt-4o", text=text))

    out: dict[str, Any] = {}
    for label in ("first", "cached"):
        calls.update(n=0, chars=0)
        started = time.perf_counter()
        chunks = await plan_chunks_cached(
            items, chunk_tokens=100_000, count=count, store=store, model="gpt-4o"
        )
        out[label] = {
            "seconds": time.perf_counter() - started,
            "tokenizer_calls": calls["n"],
            "tokenized_chars": calls["chars"],
        }
    covered: dict[str, int] = {}
    for chunk in chunks:
        for part in chunk:
            covered[part.evidence_id] = covered.get(part.evidence_id, 0) + item_length(part)
    total = sum(item_length(i) for i in items)
    out["prompts"] = len(chunks)
    out["coverage"] = sum(min(covered.get(i.evidence_id, 0), item_length(i)) for i in items) / max(total, 1)
    await store.close()
    return out


_FENCE = re.compile(r'<EXTERNAL-CONTENT label="[^"]*" id="(E\d+)">\n(.*?)\n</EXTERNAL-CONTENT>', re.DOTALL)


async def step_validate(
    db: str, task_id: str, attempt_id: str, digests: list[str], window: int, findings: int = 0
) -> dict[str, Any]:
    """The real validation service, chunked, on the stored task; coverage from what the provider got.

    ``findings`` per chunk reply (each with a claim of about 200 characters) make the chunks'
    findings together outgrow the verdict's window on a big task, as a talkative validator's do.
    """
    from benchmarks._common import scripted_settings
    from core.events import EventBus
    from core.evidence.content import item_length, load_packet
    from core.llm import LLMGateway
    from core.runtime import RunContext
    from core.store import Store
    from core.tools.registry import ToolRegistry
    from core.validation import ValidationService

    verdict = {
        "goal_achievement": "the answer gives the fact",
        "completeness": "complete",
        "rule_compliance": "no rules broken",
        "status": "accepted",
        "score": 0.9,
        "citations": [
            {
                "claim": "c",
                "evidence_id": "E1",
                "quote": "000-000000000000 tide moon ocean",
                "verdict": "supported",
            }
        ],
    }
    conversations = [
        {
            "model": "validator",
            "match": "Findings from the evidence chunks",
            "turns": [{"content": json.dumps(verdict)}],
        },
        {
            "model": "validator",
            "match": "Merge of chunk findings",
            "turns": [{"content": json.dumps({"findings": verdict["citations"], "notes": "merged"})}],
        },
        {
            "model": "validator",
            "turns": [
                {
                    "content": json.dumps(
                        {
                            "findings": [
                                {
                                    **verdict["citations"][0],
                                    "claim": f"claim {k}: " + "the lookup results as reported " * 6,
                                }
                                for k in range(findings)
                            ],
                            "notes": "ok",
                        }
                    )
                }
            ],
        },
    ]
    settings = scripted_settings(
        Path(db).parent, conversations, validator_context_tokens=window, validator_timeout_s=3600
    )
    hashes: dict[str, Any] = {}
    chars: dict[str, int] = {}
    prompts = {"n": 0, "largest_chars": 0}

    class Watching(LLMGateway):
        async def complete(self, **kwargs: Any) -> Any:
            text = str(kwargs["messages"][-1]["content"])
            prompts["n"] += 1
            prompts["largest_chars"] = max(prompts["largest_chars"], len(text))
            tokens = self.token_count(settings.validator_model, kwargs["messages"])
            prompts["largest_tokens"] = max(prompts.get("largest_tokens", 0), tokens)
            for found in _FENCE.finditer(text):
                key, body = found.group(1), found.group(2)
                hashes.setdefault(key, hashlib.sha256()).update(body.encode())
                chars[key] = chars.get(key, 0) + len(body)
            del text
            return await super().complete(**kwargs)

    store = await Store.open(db)
    task = await store.get_task(task_id)
    packet = await load_packet(store, attempt_id)
    assert packet is not None and packet.main_run is not None and task.main_session_id is not None
    lengths = [item_length(t) for t in packet.main_run.tool_results]
    ctx = RunContext(
        store=store, gateway=Watching(settings), tools=ToolRegistry(), settings=settings, bus=EventBus()
    )
    import resource

    import litellm  # noqa: F401  (imported before the clock starts: its import is not validation)

    ready_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the process before validating
    started = time.perf_counter()
    report = await ValidationService(ctx).validate(
        packet,
        task_text=task.text,
        history=[],
        task_id=task_id,
        attempt_id=attempt_id,
        attempt_index=1,
        session_id=task.main_session_id,
        agent_model="scripted/agent",
    )
    seconds = time.perf_counter() - started
    ids = [f"E{n + 1}" for n in range(len(digests))]
    seen = sum(min(chars.get(key, 0), length) for key, length in zip(ids, lengths, strict=True))
    stored = (await store.list_validations(task_id))[-1].prompt or ""
    await store.close()
    return {
        "seconds": round(seconds, 2),
        "ready_peak_rss_mib": round(ready_rss),
        "status": str(report.result.status),
        "strategy": report.debug["strategy"],
        "chunk_count": report.debug["chunk_count"],
        "prompts_received": prompts["n"],
        "largest_prompt_chars": prompts["largest_chars"],
        "coverage": seen / max(sum(lengths), 1),
        "intact": all(
            key in hashes and hashes[key].hexdigest() == d for key, d in zip(ids, digests, strict=True)
        ),
        "validator_reported_coverage": report.debug["coverage"],
        "citations": [str(c.check) for c in report.result.citations],
        "stored_prompt_chars": len(stored),
        "largest_prompt_tokens": prompts.get("largest_tokens", 0),
        "verdict_prompt_tokens": report.debug.get("verdict_prompt_tokens"),
        "findings_merges": len(report.debug.get("findings_fold") or []),
    }


CHILD_STEPS: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {
    "store": step_store,
    "reopen": step_reopen,
    "plan": step_plan,
    "validate": step_validate,
}


def child(args: argparse.Namespace) -> None:
    params = json.loads(args.params)
    result = asyncio.run(CHILD_STEPS[args.step](args.db, **params))
    print(json.dumps(result))


def measured(cmd: list[str], *, stdout: Any = subprocess.PIPE) -> tuple[float, float, str]:
    """Wall seconds, the child's own peak RSS in MiB, and its stdout."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    out = proc.stdout.read() if proc.stdout is not None else ""
    err = proc.stderr.read() if proc.stderr is not None else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({proc.returncode}): {err.strip()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, out


def me(step: str, db: str, **params: Any) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--step",
        step,
        "--db",
        db,
        "--params",
        json.dumps(params),
    ]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "core.cli", *args]


@dataclass
class Stored:
    """What the later steps of one size share: the workspace, the stored task and the options."""

    db: str
    folder: Path
    size: int
    task_id: str
    attempt_id: str
    digests: list[str]
    window: int
    findings: int = 0
    row: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[Stored], dict[str, Any] | None]  # its figures, or None when it did not apply


def run_show(st: Stored) -> dict[str, Any]:
    seconds, rss, _ = measured(cli("show", st.task_id, "--db", st.db), stdout=subprocess.DEVNULL)
    return {"seconds": round(seconds, 2), "peak_rss_mib": round(rss)}


def run_plan(st: Stored) -> dict[str, Any]:
    _s, rss, out = measured(me("plan", st.db, attempt_id=st.attempt_id))
    return {**json.loads(out), "peak_rss_mib": round(rss)}


def run_validate(st: Stored) -> dict[str, Any]:
    wall, rss, out = measured(
        me(
            "validate",
            st.db,
            task_id=st.task_id,
            attempt_id=st.attempt_id,
            digests=st.digests,
            window=st.window,
            findings=st.findings,
        )
    )
    return {**json.loads(out), "wall_seconds": round(wall, 2), "peak_rss_mib": round(rss)}


def run_export(st: Stored) -> dict[str, Any]:
    bundle = st.folder / "case.zip"
    seconds, rss, _ = measured(cli("export", st.task_id, "-o", str(bundle), "--db", st.db))
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(rss),
        "bundle_mib": round(bundle.stat().st_size / 1024**2),
    }


def run_verify(st: Stored) -> dict[str, Any] | None:
    bundle = st.folder / "case.zip"
    if not bundle.exists():
        return None  # export was skipped
    seconds, rss, _ = measured(cli("verify", str(bundle), "--db", st.db))
    return {"seconds": round(seconds, 2), "peak_rss_mib": round(rss)}


STEPS: list[Step] = [
    Step("show", run_show),
    Step("plan", run_plan),
    Step("validate", run_validate),
    Step("export", run_export),
    Step("verify", run_verify),
    Step("desk", lambda st: desk_step(st.db, st.task_id, measured)),  # benchmarks/_big_desk.py
]


def one_size(size: int, folder: Path, skip: set[str], window: int, findings: int = 0) -> dict[str, Any]:
    db = str(folder / "ws.sqlite3")
    row: dict[str, Any] = {"size_mib": round(size / 1024**2)}

    def done(step: str, figures: dict[str, Any]) -> None:
        row[step] = figures
        print(f"  {row['size_mib']} MiB {step}: {json.dumps(figures)}", file=sys.stderr, flush=True)

    _s, rss, out = measured(me("store", db, size=size))
    stored = json.loads(out)
    done("store", {"seconds": round(stored["seconds"], 2), "peak_rss_mib": round(rss)})
    _s, rss, out = measured(me("reopen", db, attempt_id=stored["attempt_id"], digests=stored["digests"]))
    reopened = json.loads(out)
    row["largest_value"] = reopened["largest_value"]
    done(
        "reopen",
        {"seconds": round(reopened["seconds"], 2), "peak_rss_mib": round(rss), "intact": reopened["intact"]},
    )
    st = Stored(
        db=db,
        folder=folder,
        size=size,
        task_id=stored["task_id"],
        attempt_id=stored["attempt_id"],
        digests=stored["digests"],
        window=window,
        findings=findings,
        row=row,
    )
    for step in STEPS:
        if step.name not in skip:
            figures = step.run(st)
            if figures is not None:
                done(step.name, figures)
    row["workspace_mib"] = round(sum(p.stat().st_size for p in folder.glob("ws.sqlite3*")) / 1024**2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="8M,32M", help="comma-separated sizes of tool results (100M,1G,2G)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    parser.add_argument(
        "--skip", default="", help="comma-separated steps to leave out (show,plan,validate,export,verify)"
    )
    parser.add_argument(
        "--window", type=int, default=128_000, help="the validator's context window in tokens (validate step)"
    )
    parser.add_argument(
        "--findings",
        type=int,
        default=0,
        help="findings per chunk reply of the scripted validator (validate step; 0: none)",
    )
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--params", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        child(args)
        return
    for size in [parse_size(s) for s in args.sizes.split(",") if s.strip()]:
        folder = scratch_dir()
        try:
            print(
                json.dumps(one_size(size, folder, set(args.skip.split(",")), args.window, args.findings)),
                flush=True,
            )
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
