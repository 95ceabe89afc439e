"""Team parallelism: does ``max_parallel_team_nodes`` turn into wall-time speedup?

Six parallel nodes, three model turns each (two tool rounds and an answer), every turn answered by
the scripted provider after a fixed latency, everything written to a real SQLite workspace. The
same plan runs with limits 1, 3 and 6 in one process; the speedup is measured against limit 1 and
compared with the ideal (``nodes / ceil(nodes / limit)``). Overhead that grows with concurrency
(store lock contention, litellm per-call cost) shows up as a ratio below 1.

The bare gateway runs the same calls at the same limits in the same run, with no store and no
scheduler: its own speed-up is the ceiling this machine allows (the model client's per-call CPU runs
on one event loop), and "of ceiling" (team speed-up over the gateway's) is the load-robust figure.
Each figure is min / median / max over ``--runs`` runs (default five).

Run: ``.venv/bin/python benchmarks/bench_team_parallel.py`` (no network needed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

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
from core.team import TeamPlan, TeamScheduler, build_node_messages
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


async def _bare_gateway(settings: Settings, nodes: int, turns: int, limit: int) -> float:
    """The same calls straight through the gateway, ``limit`` nodes at a time: no store, no scheduler.

    This is the floor the scheduler can reach on this machine; the gap between it and the ideal
    is the model client's own per-call CPU, which one event loop runs one call at a time. Each
    call carries what a node's call carries (its opening messages, the tool schema, the assistant
    tool calls and their results so far), so litellm's per-message and per-tool work is the same
    on both sides and the ceiling is not measured on lighter calls than the team makes.
    """
    gateway = LLMGateway(settings)
    gate = asyncio.Semaphore(limit)
    plan = _plan(nodes)
    tools = _registry().schemas()

    async def node(i: int) -> None:
        async with gate:
            messages = build_node_messages(plan.nodes[i], task_text="benchmark task", upstream=[])
            for _ in range(turns):
                response = await gateway.complete(model=settings.agent_model, messages=messages, tools=tools)
                calls = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in response.tool_calls
                ]
                assistant: dict[str, object] = {"role": "assistant", "content": response.content}
                if calls:
                    assistant["tool_calls"] = calls
                messages.append(assistant)
                messages += [
                    {"role": "tool", "tool_call_id": c.id, "name": c.name, "content": f"result for {c.id}"}
                    for c in response.tool_calls
                ]

    started = time.perf_counter()
    await asyncio.gather(*(node(i) for i in range(nodes)))
    return time.perf_counter() - started


async def one_measurement(
    store: Store, base: Settings, nodes: int, turns: int, latency_s: float, limits: list[int]
) -> list[dict[str, float]]:
    """Team and bare gateway at every limit, back to back: one run's rows, one per limit."""
    rows = []
    for limit in limits:
        settings = base.model_copy(update={"max_parallel_team_nodes": limit})
        elapsed, peak = await _one_run(store, settings, _plan(nodes))
        bare = await _bare_gateway(base, nodes, turns, limit)
        rows.append({"limit": limit, "wall_s": elapsed, "peak": peak, "bare_s": bare})
    team_base = next((r["wall_s"] for r in rows if r["limit"] == 1), rows[0]["wall_s"])
    bare_base = next((r["bare_s"] for r in rows if r["limit"] == 1), rows[0]["bare_s"])
    for row in rows:
        limit = int(row["limit"])
        ideal_speedup = nodes / math.ceil(nodes / limit)
        row["ideal_wall_s"] = math.ceil(nodes / limit) * turns * latency_s
        row["speedup"] = team_base / row["wall_s"]
        row["fraction_of_ideal"] = row["speedup"] / ideal_speedup
        row["bare_fraction_of_ideal"] = (bare_base / row["bare_s"]) / ideal_speedup
        row["of_ceiling"] = row["fraction_of_ideal"] / row["bare_fraction_of_ideal"]
    return rows


def _spread(values: list[float], fmt: str) -> str:
    return f"{min(values):{fmt}}/{statistics.median(values):{fmt}}/{max(values):{fmt}}"


async def main(
    nodes: int, turns: int, latency_s: float, limits: list[int], runs: int = 5
) -> list[list[dict[str, float]]]:
    if 1 not in limits:
        limits = [1, *limits]  # speed-ups are measured against limit 1
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        _script(script, nodes, turns, latency_s)
        store = await Store.open(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}")
        try:
            base = load_settings(script=script)
            # Warm-up: litellm import and first-call costs are paid before anything is timed.
            await _one_run(store, base, _plan(1, prefix="WARMUP"))
            measurements = [
                await one_measurement(store, base, nodes, turns, latency_s, limits) for _ in range(runs)
            ]
        finally:
            await store.close()
    load_after = os.getloadavg()
    print(f"team parallel benchmark: {nodes} nodes x {turns} turns, {latency_s * 1000:.0f} ms per turn")
    print(
        f"{runs} runs; each figure min/median/max; load average {load_before[0]:.2f} -> {load_after[0]:.2f}"
    )
    print(
        f"{'limit':>5} {'peak':>4} {'team wall s':>18} {'speedup x':>15} {'of ideal':>15} "
        f"{'bare of ideal':>15} {'of ceiling':>15}"
    )
    for i, limit in enumerate(limits):
        rows = [m[i] for m in measurements]

        def col(key: str, fmt: str, rows: list[dict[str, float]] = rows) -> str:
            return _spread([r[key] for r in rows], fmt)

        print(
            f"{limit:>5} {int(max(r['peak'] for r in rows)):>4} {col('wall_s', '.3f'):>18} "
            f"{col('speedup', '.2f'):>15} {col('fraction_of_ideal', '.2f'):>15} "
            f"{col('bare_fraction_of_ideal', '.2f'):>15} {col('of_ceiling', '.2f'):>15}"
        )
    print("of ideal: team speed-up over limit 1 / ideal speed-up (aim >= 0.9 at limits 3 and 6)")
    print("bare of ideal: the same for the bare gateway (its ceiling); of ceiling: of ideal / bare of ideal")
    return measurements


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=6)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--limits", type=int, nargs="+", default=[1, 3, 6])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.nodes, args.turns, args.latency_ms / 1000, args.limits, args.runs))
