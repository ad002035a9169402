"""The prompts, resources and completions of the conformance fixtures (`conformance`), with a
prompt that asks the client for context by result (2026-07-28).
"""

from __future__ import annotations

from typing import Final

import mcp_types
from mcp.shared.exceptions import MCPError

from toolsearch.testing.conformance_content import (
    PNG,
    Context,
    Result,
    elicit,
    json_text,
    prompt_result,
)
from toolsearch.testing.conformance_rounds import input_responses

_PROMPTS: Final = [
    {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
    {
        "name": "test_prompt_with_arguments",
        "description": "A prompt with two required arguments",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    },
    {
        "name": "test_prompt_with_embedded_resource",
        "description": "A prompt embedding a resource",
        "arguments": [
            {"name": "resourceUri", "description": "URI of the resource to embed", "required": True}
        ],
    },
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
    {"name": "test_input_required_result_prompt", "description": "A prompt that asks the user for context"},
]
_COMPLETIONS: Final = ("paris", "park", "party", "hello", "world")


async def get_prompt(ctx: Context, params: mcp_types.GetPromptRequestParams) -> Result:
    arguments = params.arguments or {}
    if params.name == "test_simple_prompt":
        return prompt_result({"type": "text", "text": "This is a simple prompt for testing."})
    if params.name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{arguments.get('arg1')}', arg2='{arguments.get('arg2')}'"
        return prompt_result({"type": "text", "text": text})
    if params.name == "test_prompt_with_embedded_resource":
        resource = {
            "uri": arguments.get("resourceUri", "test://example-resource"),
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return prompt_result(
            {"type": "resource", "resource": resource},
            {"type": "text", "text": "Please process the embedded resource above."},
        )
    if params.name == "test_prompt_with_image":
        return prompt_result(
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "text", "text": "Please analyze the image above."},
        )
    if params.name == "test_input_required_result_prompt":
        answer = input_responses(dict(ctx.params or {})).get("user_context")
        if not isinstance(answer, dict):
            schema = {
                "type": "object",
                "properties": {"context": {"type": "string"}},
                "required": ["context"],
            }
            request = elicit("What context should the prompt use?", schema)
            return {"resultType": "input_required", "inputRequests": {"user_context": request}}
        context = (
            answer.get("content", {}).get("context") if isinstance(answer.get("content"), dict) else None
        )
        return prompt_result({"type": "text", "text": f"A prompt for the context: {context}"})
    raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")


async def list_resources(ctx: Context, params: mcp_types.PaginatedRequestParams | None) -> Result:
    return {
        "resources": [
            {"uri": "test://static-text", "name": "static-text", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "mimeType": "image/png"},
        ]
    }


async def list_resource_templates(ctx: Context, params: mcp_types.PaginatedRequestParams | None) -> Result:
    template = {
        "uriTemplate": "test://template/{id}/data",
        "name": "template-data",
        "mimeType": "application/json",
    }
    return {"resourceTemplates": [template]}


async def read_resource(ctx: Context, params: mcp_types.ReadResourceRequestParams) -> Result:
    uri = str(params.uri)
    if uri == "test://static-text":
        text = "This is the content of the static text resource."
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}
    if uri == "test://static-binary":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]}
    prefix, suffix = "test://template/", "/data"
    if uri.startswith(prefix) and uri.endswith(suffix) and len(uri) > len(prefix) + len(suffix):
        identifier = uri[len(prefix) : -len(suffix)]
        data = {"id": identifier, "templateTest": True, "data": f"Data for ID: {identifier}"}
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": json_text(data)}]}
    raise MCPError(code=mcp_types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})


async def complete(ctx: Context, params: mcp_types.CompleteRequestParams) -> Result:
    prefix = params.argument.value
    values = [value for value in _COMPLETIONS if value.startswith(prefix)]
    return {"completion": {"values": values, "total": len(values), "hasMore": False}}


async def list_prompts(ctx: Context, params: mcp_types.PaginatedRequestParams | None) -> Result:
    return {"prompts": _PROMPTS}
