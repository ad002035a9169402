"""Tools that ask for input mid-call: sampling, elicitation and roots.

A legacy upstream asks on the call's SSE stream; toolsearch, stateless, cannot pass the request on,
so it answers at once with -32601 and the tool fails with that reason instead of the call stalling
until `--upstream-timeout`. A stateless upstream never hears that answer (it reaches none of its
requests): the call then ends a few seconds after the refusal with an `isError` result that says
what the upstream wanted and why toolsearch could not ask.

A 2026-07-28 upstream answers with an `input_required` result: it goes to a 2026-07-28 caller
unchanged, whose retry (its `inputResponses` and the opaque `requestState`) goes upstream again
through whichever replica takes it; a legacy caller gets an error saying why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import mcp_types
import orjson
import pytest
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from tests.conftest import connect, running_proxy, running_upstream
from tests.support.node import NODE_DIR, node_server, requires_node
from tests.support.upstream import modern_request, recorded_tools
from toolsearch.testing import serve_app
from toolsearch.testing.conformance import ConformanceUpstream

TIME_ARGS = {"timezone": "Europe/Vilnius"}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ASKING = {
    "sampling/createMessage": (
        mcp_types.CreateMessageRequest(
            params=mcp_types.CreateMessageRequestParams(
                messages=[mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(text="hi"))],
                max_tokens=10,
            )
        ),
        mcp_types.CreateMessageResult,
    ),
    "elicitation/create": (
        mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="Name?", requested_schema=SCHEMA)
        ),
        mcp_types.ElicitResult,
    ),
    "roots/list": (mcp_types.ListRootsRequest(), mcp_types.ListRootsResult),
}


async def _ask_mid_call(
    ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
) -> dict[str, Any]:
    """A legacy server's tool that asks the client (the method in its `timezone` argument) first."""
    request, result_type = ASKING[(params.arguments or {})["timezone"]]
    try:
        await ctx.session.send_request(
            request, result_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
        )
    except MCPError as refused:
        return {
            "content": [{"type": "text", "text": f"asking failed: {refused.error.message}"}],
            "isError": True,
        }
    return {"content": [{"type": "text", "text": "the client answered"}]}


async def _ask_by_result(
    ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
) -> dict[str, Any]:
    """A 2026-07-28 server's tool that asks for a name by an input_required result, then greets."""
    answer = (params.input_responses or {}).get("user_name")
    if answer is None:
        elicit = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": SCHEMA}}
        return {
            "resultType": "input_required",
            "inputRequests": {"user_name": elicit},
            "requestState": "opaque-1",
        }
    assert params.request_state == "opaque-1"
    name = answer.content["name"]
    return {"content": [{"type": "text", "text": f"Hello, {name}!"}]}


@pytest.fixture(scope="module")
def legacy_asking_proxy() -> Iterator[str]:
    with (
        running_upstream(
            recorded_tools(["time"]), legacy_only=True, stateless=False, on_call_request=_ask_mid_call
        ) as (url, _),
        running_proxy(url, upstream_timeout=10.0) as proxy,
    ):
        yield proxy


@pytest.fixture(scope="module")
def modern_asking_proxy() -> Iterator[str]:
    with (
        running_upstream(recorded_tools(["time"]), on_call_request=_ask_by_result) as (url, _),
        running_proxy(url) as proxy,
    ):
        yield proxy


@pytest.mark.parametrize("method", list(ASKING))
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_legacy_upstreams_request_mid_call_is_refused_at_once_with_the_reason(
    legacy_asking_proxy: str, method: str, mode: str
) -> None:
    arguments = {"name": "time_get_current_time", "arguments": {"timezone": method}}
    async with connect(legacy_asking_proxy, mode=mode) as client:
        result = await client.call_tool("call_read_tool", arguments)
    assert result.is_error
    assert f"asking failed: toolsearch cannot pass '{method}' on to its client" in result.content[0].text


@pytest.fixture(scope="module")
def stateless_asking_proxy() -> Iterator[str]:
    """toolsearch in front of a stateless TypeScript SDK server whose tool asks for sampling mid-call."""
    with node_server(NODE_DIR / "asking_server.mjs") as url, running_proxy(url) as proxy:
        yield proxy


@requires_node
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("summarize_text", {"text": "a long text"}),
        ("call_read_tool", {"name": "summarize_text", "arguments": {"text": "a long text"}}),
    ],
)
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_stateless_upstream_asking_mid_call_gets_the_caller_an_answer_within_seconds(
    stateless_asking_proxy: str, mode: str, tool: str, arguments: dict[str, Any]
) -> None:
    async with connect(stateless_asking_proxy, mode=mode) as client:
        with anyio.fail_after(5):  # the bound that proves it does not wait for an upstream timeout
            result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    assert text.startswith("summarize_text could not finish: the upstream asked for a completion from ")
    assert "(sampling/createMessage) in the middle of the call" in text
    assert "toolsearch cannot pass such a request on to its caller: it is a stateless proxy" in text


def _call(url: str, tool: str, arguments: dict[str, Any], **retry: Any) -> httpx.Response:
    return _post(url, "tools/call", {"name": tool, "arguments": arguments, **retry})


def _post(url: str, method: str, params: dict[str, Any]) -> httpx.Response:
    """A 2026-07-28 request of a caller that can answer elicitation."""
    message, headers = modern_request(method, params)
    message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
    sent = {"accept": "application/json", "content-type": "application/json", **headers}
    return httpx.post(url, content=orjson.dumps(message), headers=sent, timeout=30.0)


@pytest.fixture(scope="module")
def conformance_proxy() -> Iterator[str]:
    with serve_app(ConformanceUpstream().app()) as base, running_proxy(f"{base}/mcp") as proxy:
        yield proxy


def test_a_prompt_asking_for_input_reaches_a_modern_caller_and_its_retry_the_upstream(
    conformance_proxy: str,
) -> None:
    params = {"name": "test_input_required_result_prompt"}
    asked = _post(conformance_proxy, "prompts/get", params).json()["result"]
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"]["user_context"]["method"] == "elicitation/create"
    answers = {"user_context": {"action": "accept", "content": {"context": "tests"}}}
    done = _post(conformance_proxy, "prompts/get", {**params, "inputResponses": answers}).json()["result"]
    assert done["resultType"] == "complete"
    assert done["messages"][0]["content"]["text"] == "A prompt for the context: tests"


async def test_a_legacy_caller_is_told_why_a_prompt_asking_for_input_cannot_be_got(
    conformance_proxy: str,
) -> None:
    async with connect(conformance_proxy, mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("test_input_required_result_prompt")
    assert (
        "asks for input (elicitation/create) before it can answer prompts/get" in refused.value.error.message
    )


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("time_get_current_time", TIME_ARGS),
        ("call_read_tool", {"name": "time_get_current_time", "arguments": TIME_ARGS}),
    ],
)
def test_a_modern_upstreams_input_request_reaches_a_modern_caller_and_its_retry_the_upstream(
    modern_asking_proxy: str, tool: str, arguments: dict[str, Any]
) -> None:
    asked = _call(modern_asking_proxy, tool, arguments).json()["result"]
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"]["user_name"]["method"] == "elicitation/create"
    answers = {"user_name": {"action": "accept", "content": {"name": "Alice"}}}
    retry = {"inputResponses": answers, "requestState": asked["requestState"]}
    done = _call(modern_asking_proxy, tool, arguments, **retry).json()["result"]
    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "Hello, Alice!"}]


async def test_a_legacy_caller_is_told_why_a_tool_asking_for_input_cannot_finish(
    modern_asking_proxy: str,
) -> None:
    async with connect(modern_asking_proxy, mode="legacy") as client:
        result = await client.call_tool("time_get_current_time", TIME_ARGS)
    assert result.is_error
    assert "asks for input (elicitation/create)" in result.content[0].text
    assert "only to clients of protocol 2026-07-28" in result.content[0].text
