"""The agent's tool loop, as explicit steps: request, call tools, finalize.

Every step leaves session events in the store, so whatever happens to the run (budget,
cancellation, a provider failure) its evidence is already on disk when it ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from core.agent.outcome import (
    RunOutcome,
    RunStep,
    _chars,
    scrub_secrets,
)
from core.agent.unfinished import unfinished_reason
from core.domain.event_payloads import (
    EventPayload,
    FinalizationRequest,
    LlmCallFailure,
    LlmRequestSnapshot,
    LlmResponse,
    RunEnd,
    RunStart,
    ToolResultRecord,
)
from core.domain.facts import FinishReason
from core.domain.usage import UsageTotals
from core.errors import StoreError
from core.events import EvidenceRecorded, TranscriptDelta
from core.llm import LLMResponse
from core.llm.errors import LLMBadRequest, LLMError
from core.llm.gateway import provider_family
from core.llm.streaming import STREAM_CUT
from core.profiles import ModelRole
from core.runtime import RunContext
from core.store import NewEvent, new_event
from core.tools.registry import ToolResult

logger = logging.getLogger(__name__)

FINALIZATION_INSTRUCTION = (
    "The tool budget for this task is spent: no more tools can be called. Answer the task now from "
    "the evidence already gathered above. Say plainly what you could not confirm or what is missing."
)
TRUNCATED_MESSAGE = "the answer was cut off at the model's output token limit (finish_reason=length)"
TOOLS_IGNORED_MESSAGE = (
    "tools-ignored: the model was offered tools and a document corpus but called no tool, so the "
    "answer rests on no gathered evidence (the server may ignore tools: check its chat template)"
)
_ANSWERED = frozenset({FinishReason.STOP, FinishReason.TRUNCATED})
STREAM_CUT_MESSAGE = (
    "the answer stream ended before the server said it was finished (no finish reason, or the "
    "connection closed mid-answer); what arrived is kept but it may be incomplete"
)
LENGTH_RETRY_FLOOR = 1024  # max_tokens for the retried turn when neither the call nor the usage says more
BUDGET_FINALIZATION_INSTRUCTION = (
    "The {budget} budget for this task is spent: no more tools can be called. Answer the task now "
    "from the evidence already gathered above. Say plainly what you could not confirm or what is missing."
)
FIRM_FINALIZATION_INSTRUCTION = (
    "Your last reply {why}, and it cannot be the answer: no tool will run any more, whatever you "
    "ask. Write the final answer to the task now, using only the evidence above. If something is "
    "missing or unconfirmed, say so in the answer."
)
FINALIZATION_REFUSED = "finalization refused"
NO_ANSWER_MESSAGE = (
    "No usable answer was produced: the agent reached its tool budget and the final answer "
    "request failed or came back empty. The evidence gathered so far is kept for review."
)


class AgentLoop:
    """One loop per run; parallel team nodes each get their own instance and session."""

    def __init__(self, ctx: RunContext, *, on_progress: Callable[[RunStep], None] | None = None) -> None:
        self.store = ctx.store
        self.gateway = ctx.gateway
        self.tools = ctx.tools
        self.settings = ctx.settings
        self.bus = ctx.bus
        self.on_progress = on_progress

    async def run(
        self,
        *,
        session_id: str,
        history: Sequence[dict[str, Any]],
        new_messages: Sequence[dict[str, Any]],
        model: str,
        task_id: str | None = None,
        attempt_id: str | None = None,
        run_kind: str = "agent",
        node_id: str | None = None,
        max_tool_iterations: int | None = None,
        include_tools: bool = True,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> RunOutcome:
        """Run until the model answers without tools, the budget is spent, or the run is cancelled.

        ``history`` is what the session already holds (earlier runs); ``new_messages`` are added by
        this run and recorded in ``run_started`` so the transcript can be rebuilt from events alone.
        """
        budget = self.settings.max_tool_iterations if max_tool_iterations is None else max_tool_iterations
        schemas = self.tools.schemas() if include_tools and budget > 0 else []
        spent = await self._spent_before(task_id)
        started = new_event(
            RunStart(
                model=model,
                run_kind=run_kind,
                node_id=node_id,
                attempt_id=attempt_id,
                max_tool_iterations=budget,
                include_tools=include_tools,
                tool_names=[s["function"]["name"] for s in schemas],
                input_messages=list(new_messages),
                history_length=len(history),
            )
        )
        run = await self.store.start_run(
            session_id=session_id,
            kind=run_kind,
            model=model,
            started=started,
            task_id=task_id,
            attempt_id=attempt_id,
            node_id=node_id,
        )
        state = _RunState(
            run_id=run.id,
            session_id=session_id,
            task_id=task_id,
            node_id=node_id,
            messages=[*history, *new_messages],
        )
        state.spent = spent
        state.schema_chars = (schemas, _chars(schemas) if schemas else 0)
        try:
            outcome = await self._loop(state, model, schemas, budget, max_tokens, temperature)
        except asyncio.CancelledError:
            await self._finish_cancelled(state)
            raise
        await self._finish(state, outcome, self._needs_evidence(schemas))
        return RunOutcome(
            run_id=state.run_id,
            session_id=session_id,
            output_text=outcome.output_text,
            finish_reason=outcome.finish_reason,
            iterations=state.iteration,
            error=outcome.error,
            pending_tool_calls=outcome.pending_tool_calls,
            messages=state.messages,
            history_len=len(history),
        )

    # ------------------------------------------------------------------ steps
    async def _finish_cancelled(self, state: _RunState) -> None:
        """Record a cancelled run's end; shielded, so the write completes under the cancellation.

        The caller waits for the cancellation it asked for (an abandon, a shutdown), so a store
        error here is logged, not raised in its place: the run's rows were lost (its start, written
        behind, or an event), and crash recovery finds the run without an end.
        """
        finish = _Finish(FinishReason.CANCELLED, state.last_content or "", "the run was cancelled")
        try:
            await asyncio.shield(self._finish(state, finish))
        except StoreError as exc:
            logger.warning("run %s was cancelled and its end could not be written: %s", state.run_id[:8], exc)

    async def _loop(
        self,
        state: _RunState,
        model: str,
        schemas: list[dict[str, Any]],
        budget: int,
        max_tokens: int | None,
        temperature: float | None,
    ) -> _Finish:
        tool_rounds = 0
        while True:
            state.iteration += 1
            offered = schemas if schemas and tool_rounds < budget else []
            self._progress(state, "llm")
            try:
                response = await self._request(state, model, offered, None, max_tokens, temperature)
            except LLMError as exc:
                return _Finish(FinishReason.LLM_ERROR, "", str(exc))
            if response.finish_reason == STREAM_CUT:
                # Cut twice: the half-written calls are not run, and the text is no whole answer.
                return _Finish(
                    FinishReason.TRUNCATED,
                    response.content or "",
                    STREAM_CUT_MESSAGE,
                    bool(response.tool_calls),
                )
            if not response.tool_calls or not offered:
                text = (response.content or "").strip()
                # Tool calls when none were offered, or a reply that only announces more work:
                # the "answer" is a preamble to work never done (the validator's pre-check).
                pending = unfinished_reason(text, bool(response.tool_calls)) is not None
                if not text:
                    return _Finish(
                        FinishReason.EMPTY_RESPONSE, "", "the model returned an empty answer", pending
                    )
                if response.finish_reason == "length":
                    return _Finish(FinishReason.TRUNCATED, response.content or "", TRUNCATED_MESSAGE, pending)
                return _Finish(FinishReason.STOP, response.content or "", None, pending)
            await self._call_tools(state, response)
            tool_rounds += 1
            if tool_rounds >= budget:
                return await self._finalize(state, model, schemas, max_tokens, temperature)
            spent = self._budget_spent(state)
            if spent is not None:
                return await self._finalize(state, model, schemas, max_tokens, temperature, spent)

    async def _request(
        self,
        state: _RunState,
        model: str,
        tools: list[dict[str, Any]],
        tool_choice: str | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> LLMResponse:
        snapshot = self._snapshot(state, model, tools, tool_choice, max_tokens, temperature)
        response = await self._call(state, snapshot, model, tools, tool_choice, max_tokens, temperature)
        snapshot, response = await self._retry_cut_turn(
            state, snapshot, response, model, tools, tool_choice, max_tokens, temperature
        )
        assistant: dict[str, Any] = {"role": "assistant", "content": response.content}
        if response.tool_calls:
            assistant["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in response.tool_calls
            ]
        state.add(assistant)
        state.last_content = response.content or state.last_content
        received = new_event(
            LlmResponse(
                iteration=state.iteration,
                content=response.content,
                tool_calls=[c.model_dump() for c in response.tool_calls],
                finish_reason=response.finish_reason,
                usage=response.usage.model_dump(),
                latency_s=round(response.latency_s, 6),
                model=response.model,
            )
        )
        # The calls to run are the ones this response lists: no row of their own repeats them.
        self._enqueue(state, [snapshot, received])
        return response

    async def _retry_cut_turn(
        self,
        state: _RunState,
        snapshot: NewEvent,
        response: LLMResponse,
        model: str,
        tools: list[dict[str, Any]],
        tool_choice: str | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> tuple[NewEvent, LLMResponse]:
        """A turn cut short is asked once more, the cut reply dropped and the reason logged.

        A stream the server ended early (another request interrupted it, or it went away) usually
        completes on a second try with the same limits; a tool turn cut off by the output limit
        carries half-written calls and is asked again with room to finish.
        """
        if response.finish_reason == STREAM_CUT:
            retry_tokens = max_tokens
            failure = LlmCallFailure(
                iteration=state.iteration,
                kind="stream_cut",
                error="the reply stream ended before the server said it was finished (no finish reason, or no end-of-stream marker); retrying the turn once",
                usage=response.usage.model_dump(),
            )
        else:
            larger = self._length_retry_tokens(model, max_tokens, response) if tools else None
            if larger is None:
                return snapshot, response
            retry_tokens = larger
            failure = LlmCallFailure(
                iteration=state.iteration,
                kind="truncated",
                error=f"the reply was cut off at max_tokens={max_tokens} (finish_reason=length); "
                f"retrying the turn once with max_tokens={larger}",
                usage=response.usage.model_dump(),
                retry_max_tokens=larger,
            )
        self._enqueue(state, [snapshot, new_event(failure)])
        snapshot = self._snapshot(state, model, tools, tool_choice, retry_tokens, temperature)
        return snapshot, await self._call(
            state, snapshot, model, tools, tool_choice, retry_tokens, temperature
        )

    async def _call(
        self,
        state: _RunState,
        snapshot: NewEvent,
        model: str,
        tools: list[dict[str, Any]],
        tool_choice: str | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> LLMResponse:
        on_delta = self._delta_sink(state)
        try:
            response = await self.gateway.complete(
                model=model,
                role=ModelRole.AGENT,  # team nodes and the synthesis are agents too
                messages=state.messages,
                tools=tools or None,
                tool_choice=tool_choice,
                max_tokens=max_tokens,
                temperature=temperature,
                stream=on_delta is not None,  # streaming is for showing text: only with someone to show it
                on_delta=on_delta,
            )
        except LLMError as exc:
            self._enqueue(
                state,
                [
                    snapshot,
                    new_event(LlmCallFailure(iteration=state.iteration, kind=exc.kind, error=str(exc))),
                ],
            )
            raise
        state.spent.add(response.usage.model_dump())  # a dropped, cut-off turn was paid for too
        return response

    def _length_retry_tokens(self, model: str, max_tokens: int | None, response: LLMResponse) -> int | None:
        """The larger ``max_tokens`` for retrying a turn cut off by the output limit; None when not allowed.

        Twice what was asked (or what the model managed), capped by the model's own output limit
        where litellm knows it: a turn already at that limit cannot be given more.
        """
        if response.finish_reason != "length":
            return None
        used = max_tokens or response.usage.completion_tokens or 0
        ceiling = self.gateway.max_output_tokens(model)
        if ceiling is not None and used >= ceiling:
            return None
        larger = max(2 * used, LENGTH_RETRY_FLOOR)
        return min(larger, ceiling) if ceiling is not None else larger

    def _snapshot(
        self,
        state: _RunState,
        model: str,
        tools: list[dict[str, Any]],
        tool_choice: str | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> NewEvent:
        full = self.settings.debug_full_request_snapshots
        snapshot = LlmRequestSnapshot(
            iteration=state.iteration,
            provider=provider_family(model),
            model=model,
            message_count=len(state.messages),
            tool_names=[t["function"]["name"] for t in tools],
            message_chars=state.message_chars,
            tool_schema_chars=state.tool_schema_chars(tools),
            max_tokens=max_tokens,
            temperature=temperature,
            thinking=False,
            full_request=True if full else None,
        )
        if not full:
            return new_event(snapshot)
        request = scrub_secrets({"messages": state.messages, "tools": tools, "tool_choice": tool_choice})
        # The full request is stored once, in ``content``; duplicating it in the payload is what
        # made request logs balloon before compact snapshots existed.
        return new_event(snapshot, content=json.dumps(request, ensure_ascii=False, default=str))

    async def _call_tools(self, state: _RunState, response: LLMResponse) -> None:
        """Run the turn's calls concurrently; append results to the transcript in call order."""
        self._progress(state, "tools", current_tool=", ".join(c.name for c in response.tool_calls))
        state.tool_calls += len(response.tool_calls)
        asked = response.tool_calls
        results: list[ToolResult]
        if len(asked) == 1:  # the common turn: no task and no gathering future for a single call
            results = [await self.tools.execute(asked[0].name, asked[0].arguments)]
        else:
            results = await asyncio.gather(*(self.tools.execute(c.name, c.arguments) for c in asked))
        events: list[NewEvent] = []
        for call, result in zip(response.tool_calls, results, strict=True):
            calls, failed, first = state.tool_errors
            if result.is_error:
                failed, first = failed + 1, first or f"{call.name}: {result.content.splitlines()[0][:300]}"
            state.tool_errors = (calls + 1, failed, first)
            state.add({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result.content})
            events.append(
                new_event(
                    ToolResultRecord(
                        iteration=state.iteration,
                        tool_name=call.name,
                        tool_call_id=call.id,
                        is_error=result.is_error,
                        url=result.url,
                        title=result.title,
                        content_chars=len(result.content),
                        data=result.data,
                    ),
                    content=result.content,
                )
            )
        self._enqueue(state, events)
        if state.task_id is not None:
            self.bus.publish(EvidenceRecorded(task_id=state.task_id, run_id=state.run_id, count=len(events)))

    async def _finalize(
        self,
        state: _RunState,
        model: str,
        schemas: list[dict[str, Any]],
        max_tokens: int | None,
        temperature: float | None,
        spent_budget: str | None = None,
    ) -> _Finish:
        """One last call with no tools offered: the model must answer from what it gathered.

        ``spent_budget`` names the task's cost or token budget when that, not the tool budget,
        ended the loop. A reply that still asks for tools or only announces more work (the
        pre-check every terminal reply gets, ``core.agent.unfinished``) is refused: the model is
        asked once more, firmly; a second such reply ends the run with ``NO_ANSWER_MESSAGE``,
        finish reason ``max_tool_iterations_unfinalized`` and the refusal as its error.
        """
        self._progress(state, "finalizing")
        text = (
            FINALIZATION_INSTRUCTION
            if spent_budget is None
            else BUDGET_FINALIZATION_INSTRUCTION.format(budget=spent_budget)
        )
        refused: str | None = None
        for _ in range(2):
            if refused is not None:
                self._drop_refused_calls(state)
                text = FIRM_FINALIZATION_INSTRUCTION.format(why=refused)
            instruction = {"role": "user", "content": text}
            state.add(instruction)
            request = FinalizationRequest(
                iteration=state.iteration, message=instruction, budget=spent_budget, refused=refused
            )
            await self._append(state, request)
            state.iteration += 1
            try:
                response = await self._final_request(state, model, schemas, max_tokens, temperature)
            except LLMError as exc:
                return _unfinalized(f"finalization failed: {exc}", spent_budget)
            if (response.content or "").strip() and response.finish_reason == STREAM_CUT:
                return _Finish(FinishReason.TRUNCATED, response.content or "", STREAM_CUT_MESSAGE)
            refused = unfinished_reason(response.content, bool(response.tool_calls))
            if refused is None and not (response.content or "").strip():
                return _unfinalized("finalization returned no answer", spent_budget)
            if refused is None and response.finish_reason == "length":
                # The closing answer hit the output limit: a fragment, never a finished answer
                # (the same rule as an answer cut off inside the loop).
                return _Finish(FinishReason.TRUNCATED, response.content or "", TRUNCATED_MESSAGE)
            if refused is None:
                return _Finish(
                    FinishReason.MAX_TOOL_ITERATIONS_FINALIZED,
                    response.content or "",
                    None,
                    budget=spent_budget,
                )
        return _unfinalized(f"{FINALIZATION_REFUSED}: the reply {refused}, twice", spent_budget)

    async def _final_request(
        self,
        state: _RunState,
        model: str,
        schemas: list[dict[str, Any]],
        max_tokens: int | None,
        temperature: float | None,
    ) -> LLMResponse:
        try:
            return await self._request(state, model, [], None, max_tokens, temperature)
        except LLMBadRequest as exc:
            if "tool" not in str(exc).lower():
                raise
            # Some providers insist tools stay declared once tool messages exist.
            return await self._request(state, model, schemas, "none", max_tokens, temperature)

    @staticmethod
    def _drop_refused_calls(state: _RunState) -> None:
        """The refused reply's tool calls will never run: the transcript loses them (as a replay of
        the log does, ``core.evidence.builder``), so the next request is one providers accept."""
        last = state.messages[-1] if state.messages else {}
        if last.get("role") != "assistant" or not last.get("tool_calls"):
            return
        state.messages.pop()
        if last.get("content"):
            state.add({"role": "assistant", "content": last["content"]})
        else:
            state.recount()

    def _needs_evidence(self, schemas: list[dict[str, Any]]) -> bool:
        """The run was offered tools and the task has a corpus to search: an answer should rest on it."""
        offered = {s["function"]["name"] for s in schemas}
        return self.settings.corpus is not None and "search_corpus" in offered

    async def _finish(self, state: _RunState, finish: _Finish, needs_evidence: bool = False) -> None:
        warnings = _warnings_for(finish)
        calls, failed, first = state.tool_errors
        if calls and failed == calls:  # e.g. a corpus that cannot be searched: the answer has no evidence
            warnings.append(f"every tool call of this run failed ({calls}); first: {first}")
        # A server that ignores ``tools`` (a chat template without them) answers from the model's
        # memory: say so, rather than let an answer that searched nothing pass as researched.
        ignored = needs_evidence and state.tool_calls == 0 and finish.finish_reason in _ANSWERED
        if ignored:
            warnings.append(TOOLS_IGNORED_MESSAGE)
        finished = new_event(
            RunEnd(
                finish_reason=finish.finish_reason,
                output_text=finish.output_text,
                error=finish.error,
                pending_tool_calls=finish.pending_tool_calls,
                iterations=state.iteration,
                warnings=warnings,
                tools_ignored=True if ignored else None,
            )
        )
        await self.store.end_run(
            state.run_id,
            session_id=state.session_id,
            finished=finished,
            finish_reason=finish.finish_reason,
            output_text=finish.output_text,
            task_id=state.task_id,
        )
        self._progress(state, "finished")

    # ------------------------------------------------------------------ plumbing
    async def _append(self, state: _RunState, payload: EventPayload, content: str | None = None) -> None:
        await self._append_many(state, [new_event(payload, content=content)])

    async def _append_many(self, state: _RunState, events: list[NewEvent]) -> None:
        await self.store.commit_events(state.session_id, events, run_id=state.run_id, task_id=state.task_id)

    def _enqueue(self, state: _RunState, events: list[NewEvent]) -> None:
        """A run's events, its start included, are written behind the loop; only its end is awaited."""
        self.store.enqueue_events(state.session_id, events, run_id=state.run_id, task_id=state.task_id)

    async def _spent_before(self, task_id: str | None) -> UsageTotals:
        """What the task spent in earlier runs; only read when a task budget is set."""
        if task_id is None or (
            self.settings.max_task_cost_usd is None and self.settings.max_task_tokens is None
        ):
            return UsageTotals()
        return await self.store.task_spend(task_id)  # summed in the database: no event is read back

    def _budget_spent(self, state: _RunState) -> str | None:
        """Which task budget (cost or tokens) the calls so far have used up, if any."""
        cost_cap, token_cap = self.settings.max_task_cost_usd, self.settings.max_task_tokens
        if cost_cap is not None and state.spent.cost_usd >= cost_cap:
            return "cost"
        if token_cap is not None and state.spent.tokens >= token_cap:
            return "token"
        return None

    def _delta_sink(self, state: _RunState) -> Callable[[str], None] | None:
        """Publishes each streamed text piece; None when streaming is off or nobody listens."""
        if not self.settings.stream_agent or not self.bus.has_observers:
            return None
        bus, task_id, run_id, node_id, iteration = (
            self.bus,
            state.task_id,
            state.run_id,
            state.node_id,
            state.iteration,
        )

        def on_delta(text: str) -> None:
            bus.publish(
                TranscriptDelta(task_id=task_id, run_id=run_id, iteration=iteration, text=text, node=node_id)
            )

        return on_delta

    def _progress(self, state: _RunState, phase: str, current_tool: str | None = None) -> None:
        if self.on_progress is not None:
            self.on_progress(
                RunStep(
                    run_id=state.run_id,
                    session_id=state.session_id,
                    iteration=state.iteration,
                    phase=phase,
                    current_tool=current_tool,
                    node_id=state.node_id,
                )
            )


class _RunState:
    __slots__ = (
        "_message_chars",
        "iteration",
        "last_content",
        "messages",
        "node_id",
        "run_id",
        "schema_chars",
        "session_id",
        "spent",
        "task_id",
        "tool_calls",
        "tool_errors",
    )

    def __init__(
        self,
        *,
        run_id: str,
        session_id: str,
        task_id: str | None,
        node_id: str | None,
        messages: list[dict[str, Any]],
    ) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.task_id = task_id
        # (calls, failed calls, the first failure's words): a run whose every call failed says so
        self.tool_errors: tuple[int, int, str] = (0, 0, "")
        self.node_id = node_id
        self.messages = messages
        self.iteration = 0
        self.tool_calls = 0  # calls the model asked for in this run
        self.last_content: str | None = None
        self.spent = UsageTotals()
        self.schema_chars: tuple[list[dict[str, Any]], int] = ([], 0)  # the run's schemas and their size
        self._message_chars = sum(_chars(m) for m in messages)

    def tool_schema_chars(self, tools: list[dict[str, Any]]) -> int:
        """Serialised size of the offered tools: the run's own schemas are measured once per run,
        not re-serialised for every turn's snapshot."""
        if not tools:
            return 0
        schemas, size = self.schema_chars
        return size if tools is schemas else _chars(tools)

    def recount(self) -> None:
        """Measure the transcript again after a message was taken out of it."""
        self._message_chars = sum(_chars(m) for m in self.messages)

    def add(self, message: dict[str, Any]) -> None:
        """Append to the transcript, keeping its serialised size without re-serialising it all."""
        self.messages.append(message)
        self._message_chars += _chars(message)

    @property
    def message_chars(self) -> int:
        """``len(json.dumps(messages))``: the items, their ", " separators and the brackets."""
        n = len(self.messages)
        return self._message_chars + 2 * max(n - 1, 0) + 2


class _Finish:
    __slots__ = ("budget", "error", "finish_reason", "output_text", "pending_tool_calls")

    def __init__(
        self,
        finish_reason: FinishReason,
        output_text: str,
        error: str | None,
        pending_tool_calls: bool = False,
        *,
        budget: str | None = None,
    ) -> None:
        self.finish_reason = finish_reason
        self.output_text = output_text
        self.error = error
        self.pending_tool_calls = pending_tool_calls
        self.budget = budget  # "cost" or "token" when a task budget, not the tool budget, ended the loop


def _unfinalized(error: str, budget: str | None) -> _Finish:
    """The documented fallback: no usable answer, and why (recorded as the run's error)."""
    return _Finish(FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED, NO_ANSWER_MESSAGE, error, budget=budget)


def _warnings_for(finish: _Finish) -> list[str]:
    if finish.budget is not None and finish.finish_reason is FinishReason.MAX_TOOL_ITERATIONS_FINALIZED:
        return [
            f"the task's {finish.budget} budget was reached; the answer was written from the evidence so far"
        ]
    if finish.budget is not None:
        return [f"the task's {finish.budget} budget was reached and no final answer could be produced"]
    messages = {
        FinishReason.MAX_TOOL_ITERATIONS_FINALIZED: (
            "the tool budget was reached; the answer was written from the evidence gathered so far"
        ),
        FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED: (
            "the tool budget was reached and no final answer could be produced"
        ),
        FinishReason.CANCELLED: "the run was cancelled before it finished",
        FinishReason.LLM_ERROR: f"the model call failed: {finish.error}",
        FinishReason.EMPTY_RESPONSE: "the model returned an empty answer",
        FinishReason.TRUNCATED: finish.error or TRUNCATED_MESSAGE,
    }
    return [messages[finish.finish_reason]] if finish.finish_reason in messages else []
