"""What the Settings dialog asks about models: which local servers answer, and does a profile work.

The desk may not import ``core.llm``; these two calls are its door to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import Settings
from core.llm.errors import LLMError
from core.llm.gateway import LLMGateway
from core.llm.local import LocalServer, detect_local_servers
from core.profiles import ModelRole, role_model

TEST_PROMPT = "Reply with the single word: ready"
CONTRACT_PROMPT = 'Reply with the JSON object {"ready": true} and nothing else.'
_CONTRACT_SCHEMA = {
    "type": "object",
    "properties": {"ready": {"type": "boolean"}},
    "required": ["ready"],
    "additionalProperties": False,
}
TOOL_PROMPT = "Call the tool report_ready with ready set to true. Do not answer in text."
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "report_ready",
        "description": "Report that the model is ready.",
        "parameters": _CONTRACT_SCHEMA,
    },
}


@dataclass
class ConnectionReport:
    """What "Test connection" found: the answer, the structured-output contract, tool calls."""

    answer: str
    contract: str | None = None  # json_schema, json_object or prompt_only; None when the probe failed
    contract_fallbacks: list[str] = field(default_factory=list)
    contract_error: str | None = None
    tool_calls: bool | None = None  # None when the probe failed
    tool_error: str | None = None

    def lines(self) -> list[str]:
        """The report as the Settings page shows it, one finding a line."""
        out = [f"The model answered: {self.answer}"]
        if self.contract is not None:
            refused = f" ({'; '.join(self.contract_fallbacks)})" if self.contract_fallbacks else ""
            out.append(f"Structured output: {self.contract}{refused}")
        else:
            out.append(f"Structured output: not determined ({self.contract_error})")
        if self.tool_calls is None:
            out.append(f"Tool calls: not determined ({self.tool_error})")
        elif self.tool_calls:
            out.append("Tool calls: returned")
        else:
            out.append(
                "Tool calls: none returned; the server may ignore tools (llama.cpp's server needs "
                "--jinja; llama-cpp-python needs a chat format with function calling)"
            )
        return out


async def try_connection(settings: Settings, role: ModelRole, *, timeout_s: float = 30.0) -> str:
    """One tiny call with ``role``'s profile; the model's answer, or the exact error raised.

    Raises ``ConfigurationError`` (no model, no key) or ``LLMError`` with the provider's message.
    """
    from core.errors import ConfigurationError

    model = role_model(settings, role)
    if model is None:
        raise ConfigurationError(f"profiles.{role.value}: no model is set for this role")
    gateway = LLMGateway(settings, retry_backoff_s=0.0)
    await gateway.check_ready([role])
    response = await gateway.complete(
        model=model,
        messages=[{"role": "user", "content": TEST_PROMPT}],
        max_tokens=16,
        timeout_s=timeout_s,
        num_retries=0,
        role=role,
    )
    return (response.content or "").strip() or f"(an empty answer, finish reason {response.finish_reason})"


async def probe_connection(
    settings: Settings, role: ModelRole, *, timeout_s: float = 30.0
) -> ConnectionReport:
    """``try_connection``, then what the endpoint honours: the strongest structured-output contract
    (negotiated as every later call will, and remembered for the process) and whether it returns
    tool calls when one is asked for. A failed probe is reported, not raised; the first call's
    failure is raised as ``try_connection`` raises it.
    """
    answer = await try_connection(settings, role, timeout_s=timeout_s)
    report = ConnectionReport(answer=answer)
    model = role_model(settings, role)
    assert model is not None  # try_connection refused a role with no model
    gateway = LLMGateway(settings, retry_backoff_s=0.0)
    try:
        structured = await gateway.complete(
            model=model,
            messages=[{"role": "user", "content": CONTRACT_PROMPT}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "ready", "schema": _CONTRACT_SCHEMA},
            },
            max_tokens=16,
            timeout_s=timeout_s,
            num_retries=0,
            role=role,
        )
        report.contract = structured.structured_contract or "json_schema"
        report.contract_fallbacks = structured.contract_fallbacks
    except LLMError as exc:
        report.contract_error = str(exc)
    try:
        tooled = await gateway.complete(
            model=model,
            messages=[{"role": "user", "content": TOOL_PROMPT}],
            tools=[_PROBE_TOOL],
            max_tokens=64,
            timeout_s=timeout_s,
            num_retries=0,
            role=role,
        )
        report.tool_calls = bool(tooled.tool_calls)
    except LLMError as exc:
        report.tool_error = str(exc)
    return report


__all__ = ["ConnectionReport", "LocalServer", "detect_local_servers", "probe_connection", "try_connection"]
