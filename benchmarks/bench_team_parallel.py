"""Team parallelism: does ``max_parallel_team_nodes`` turn into wall-time speedup?

Six parallel nodes, three model turns each (two tool rounds and an answer), every turn answered by
the scripted provider after a fixed latency, everything written to a real SQLite workspace. The
same plan runs with limits 1, 3 and 6 in one process; the speedup is measured against limit 1 and
compared with the ideal (``nodes / ceil(nodes / limit)``). Overhead that grows with concurrency
(store lock contention, litellm per-call cost) shows up as a ratio below 1.

Run: ``.venv/bin/python benchmarks/bench_team_parallel.py`` (no network needed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Benchmarks must not pick up a user's configuration file.
os.environ["EVIDENCE_DESK_CONFIG_FILE"] = os.devnull + "/evidence-desk-bench.toml"
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from core.config import Settings, load_settings
from core.events import EventBus
from core.llm import LLMGateway, reset_scripted_stats, scripted_stats
from core.runtime import RunContext
from core.store import Store
from core.team import TeamPlan, TeamScheduler
from core.tools.registry import ToolRegistry, ToolResult


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    async def lookup(query: str) -> ToolResult:
        """Look something up (instant: the benchmark measures scheduling, not tools)."""
        return ToolResult(content=f"result for {query}")

    reg.register(lookup)
    return reg


def _script(path: Path, nodes: int, turns: int, latency_s: float) -> None:
    conversations = []
    for i in range(nodes):
        word = f"BENCHNODE{i}"
        node_turns: list[dict[str, object]] = [
            {"tool_calls": [{"name": "lookup", "arguments": {"query": f"{word}-{t}"}}], "delay_s": latency_s}
            for t in range(turns - 1)
        ]
        node_turns.append({"content": f"{word} answer", "delay_s": latency_s})
        conversations.append({"model": "agent", "match": rf"\b{word}\b", "turns": node_turns})
    conversations.append({"model": "agent", "match": "WARMUP", "turns": [{"content": "warm"}]})
    path.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")


def _plan(nodes: int, *, prefix: str = "BENCHNODE") -> TeamPlan:
    return TeamPlan.model_validate(
        {
            "id": "bench",
            "mode": "parallel",
            "nodes": [
                {
                    "id": f"n{i}",
                    "role": "You are a researcher.",
                    "task": f"study {prefix}{i}",
                    "tools": ["lookup"],
                }
                for i in range(nodes)
            ],
        }
    )


async def _one_run(store: Store, settings: Settings, plan: TeamPlan) -> tuple[float, int]:
    task = await store.create_task("benchmark task")
    attempt = await store.create_attempt(task.id, 1, trigger="start", prompt=task.text)
    main = await store.create_session(task_id=task.id, kind="main")
    ctx = RunContext(
        store=store, gateway=LLMGateway(settings), tools=_registry(), settings=settings, bus=EventBus()
    )
    scheduler = TeamScheduler(ctx)
    reset_scripted_stats()
    started = time.perf_counter()
    team = await scheduler.run(
        plan, task_text=task.text, task_id=task.id, attempt_id=attempt.id, parent_session_id=main.id
    )
    elapsed = time.perf_counter() - started
    failed = [r.node_id for r in team.node_results if r.status != "succeeded"]
    if failed:
        raise RuntimeError(f"benchmark nodes did not succeed: {failed}")
    return elapsed, scripted_stats().peak_in_flight


async def _bare_gateway(settings: Settings, nodes: int, turns: int) -> float:
    """The same calls straight through the gateway, all nodes at once: no store, no scheduler.

    This is the floor the scheduler can reach on this machine; the gap between it and the ideal
    is the model client's own per-call CPU, which one event loop runs one call at a time.
    """
    gateway = LLMGateway(settings)

    async def node(i: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"study BENCHNODE{i}"}]
        for _ in range(turns):
            response = await gateway.complete(model=settings.agent_model, messages=messages)
            messages.append({"role": "assistant", "content": response.content or "tool call"})

    started = time.perf_counter()
    await asyncio.gather(*(node(i) for i in range(nodes)))
    return time.perf_counter() - started


async def main(nodes: int, turns: int, latency_s: float, limits: list[int]) -> list[dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        _script(script, nodes, turns, latency_s)
        store = await Store.open(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}")
        try:
            base = load_settings(script=script)
            # Warm-up: litellm import and first-call costs are paid before anything is timed.
            await _one_run(store, base, _plan(1, prefix="WARMUP"))
            rows = []
            for limit in limits:
                settings = base.model_copy(update={"max_parallel_team_nodes": limit})
                elapsed, peak = await _one_run(store, settings, _plan(nodes))
                rows.append({"limit": limit, "wall_s": elapsed, "peak": peak})
            bare = await _bare_gateway(base, nodes, turns)
        finally:
            await store.close()
    baseline = next((r["wall_s"] for r in rows if r["limit"] == 1), rows[0]["wall_s"])
    print(f"team parallel benchmark: {nodes} nodes x {turns} turns, {latency_s * 1000:.0f} ms per turn")
    print(
        f"{'limit':>5} {'wall s':>8} {'ideal s':>8} {'peak':>5} {'speedup':>8} {'ideal x':>8} {'of ideal':>9}"
    )
    for row in rows:
        limit = int(row["limit"])
        ideal_wall = math.ceil(nodes / limit) * turns * latency_s
        ideal_speedup = nodes / math.ceil(nodes / limit)
        speedup = baseline / row["wall_s"]
        row.update(ideal_wall_s=ideal_wall, speedup=speedup, ideal_speedup=ideal_speedup)
        row["fraction_of_ideal"] = speedup / ideal_speedup
        print(
            f"{limit:>5} {row['wall_s']:>8.3f} {ideal_wall:>8.3f} {int(row['peak']):>5} "
            f"{speedup:>7.2f}x {ideal_speedup:>7.2f}x {row['fraction_of_ideal']:>9.2f}"
        )
    unlimited = next((r for r in rows if r["limit"] >= nodes), None)
    ideal_all = turns * latency_s
    print(
        f"bare gateway, all {nodes} at once (no store, no scheduler): {bare:.3f} s "
        f"= {ideal_all / bare:.2f} of the ideal {ideal_all:.3f} s"
    )
    if unlimited is not None:
        print(
            f"scheduler + store overhead over the bare gateway at limit {int(unlimited['limit'])}: "
            f"{(unlimited['wall_s'] / bare - 1) * 100:+.1f}%"
        )
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=6)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--limits", type=int, nargs="+", default=[1, 3, 6])
    args = parser.parse_args()
    asyncio.run(main(args.nodes, args.turns, args.latency_ms / 1000, args.limits))
