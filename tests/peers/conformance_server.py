#!/usr/bin/env python3
"""MCP server for the official conformance suite's server scenarios (mcp==1.30.0, run under .venv-mcp1).

Usage: conformance_server.py --port P --name NAME

Implements every tool, resource, prompt and utility that the default (active) server suite of
@modelcontextprotocol/conformance@0.1.16 exercises, with the names, arguments and payloads its scenarios
expect, plus the pending json-schema-2020-12 scenario's tool and the pending server-sse-polling scenario's
test_reconnection. This server (like legacy_server.py and FastMCP's default) has no event store, so
test_reconnection cannot close its own SSE stream (close_sse_stream() is a no-op without one): it only takes a
second, answering on the POST stream. Directly, the scenario therefore warns (no priming event, no retry:);
through a gateway that owns the stream (sessions.resume with poll-after-ms) every check passes.

Serves MCP Streamable HTTP at http://127.0.0.1:P/mcp with FastMCP 1.30.0 in its default stateful mode
(server-minted Mcp-Session-Id, SSE responses, no event store) and its default DNS-rebinding protection for a
loopback host (foreign Host/Origin headers get 4xx). --port 0 picks a free port. Prints "READY <port>" on
stdout (flushed) once uvicorn is accepting connections; logs go to stderr.
"""

from __future__ import annotations

import base64
import json
import weakref
from typing import Annotated, Any, get_args

import anyio
from pydantic import AnyUrl, Field

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts.base import Message, UserMessage
from mcp.server.fastmcp.tools import Tool
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError

import peer_serve
from peer_serve import HOST

PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV_ONE_SAMPLE = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="  # 8 kHz mono 16-bit, silent
LOG_LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)  # least to most severe
PROMPT_ARG_SUGGESTIONS = ("paris", "park", "party", "test", "testing")

USER_INFO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

DEFAULTS_SCHEMA: dict[str, Any] = {  # SEP-1034: a default for every primitive type
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

ENUMS_SCHEMA: dict[str, Any] = {  # SEP-1330: the five enum shapes
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}

JSON_SCHEMA_2020_12: dict[str, Any] = {  # SEP-1613: $schema, $defs and additionalProperties must survive listing
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def json_schema_2020_12_tool(name: str | None = None, address: dict[str, str] | None = None) -> str:
    """Tool with JSON Schema 2020-12 features"""
    return json.dumps({"name": name, "address": address})


def build_server(name: str) -> FastMCP:
    # FastMCP derives input schemas from signatures; this one tool advertises its hand-written schema instead.
    schema_tool = Tool.from_function(json_schema_2020_12_tool).model_copy(update={"parameters": JSON_SCHEMA_2020_12})
    mcp = FastMCP(name, host=HOST, log_level="WARNING", tools=[schema_tool])
    lowlevel = mcp._mcp_server  # noqa: SLF001 - FastMCP 1.x has no public hook for setLevel/subscribe
    log_levels: weakref.WeakKeyDictionary[ServerSession, types.LoggingLevel] = weakref.WeakKeyDictionary()

    async def log(ctx: Context, level: types.LoggingLevel, message: str) -> None:
        """Send notifications/message unless below the level this session chose with logging/setLevel."""
        threshold = log_levels.get(ctx.session, "debug")
        if LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold):
            await ctx.session.send_log_message(level, message, logger=name, related_request_id=ctx.request_id)

    def require_client(ctx: Context, capability: types.ClientCapabilities, what: str) -> None:
        if not ctx.session.check_client_capability(capability):
            raise ValueError(f"the client did not declare the {what} capability")

    async def elicit(ctx: Context, message: str, schema: dict[str, Any]) -> types.ElicitResult:
        """Send elicitation/create (form mode) on this tool call's stream and return the client's answer."""
        require_client(ctx, types.ClientCapabilities(elicitation=types.ElicitationCapability()), "elicitation")
        return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)

    # Tools

    @mcp.tool()
    async def test_reconnection(ctx: Context) -> str:
        """server-sse-polling: a call long enough for a stream to be closed and resumed midway."""
        await ctx.close_sse_stream()  # a no-op without an event store, as here
        await anyio.sleep(1.0)
        return "Reconnection test completed"

    @mcp.tool()
    def test_simple_text() -> str:
        """Return one text block."""
        return "This is a simple text response for testing."

    @mcp.tool(structured_output=False)
    def test_image_content() -> list[types.ContentBlock]:
        """Return a 1x1 PNG image block."""
        return [types.ImageContent(type="image", data=PNG_1X1, mimeType="image/png")]

    @mcp.tool(structured_output=False)
    def test_audio_content() -> list[types.ContentBlock]:
        """Return a tiny audio/wav block."""
        return [types.AudioContent(type="audio", data=WAV_ONE_SAMPLE, mimeType="audio/wav")]

    @mcp.tool(structured_output=False)
    def test_embedded_resource() -> list[types.ContentBlock]:
        """Return an embedded text resource block."""
        resource = types.TextResourceContents(
            uri=AnyUrl("test://embedded-resource"), mimeType="text/plain", text="This is an embedded resource content."
        )
        return [types.EmbeddedResource(type="resource", resource=resource)]

    @mcp.tool(structured_output=False)
    def test_multiple_content_types() -> list[types.ContentBlock]:
        """Return a text, an image and an embedded resource block."""
        resource = types.TextResourceContents(
            uri=AnyUrl("test://mixed-content-resource"), mimeType="application/json", text='{"test":"data","value":123}'
        )
        return [
            types.TextContent(type="text", text="Multiple content types test:"),
            types.ImageContent(type="image", data=PNG_1X1, mimeType="image/png"),
            types.EmbeddedResource(type="resource", resource=resource),
        ]

    @mcp.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Send three info-level log notifications about 50 ms apart, then return."""
        await log(ctx, "info", "Tool execution started")
        await anyio.sleep(0.05)
        await log(ctx, "info", "Tool processing data")
        await anyio.sleep(0.05)
        await log(ctx, "info", "Tool execution completed")
        return "Tool with logging executed successfully"

    @mcp.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Report progress 0, 50 and 100 of 100 about 50 ms apart to the request's progressToken, if any."""
        for step, progress in enumerate((0, 50, 100)):
            if step:
                await anyio.sleep(0.05)
            await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
        return "Tool with progress executed successfully"

    @mcp.tool()
    def test_error_handling() -> types.CallToolResult:
        """Always fail with an isError result."""
        text = "This tool intentionally returns an error for testing"
        return types.CallToolResult(isError=True, content=[types.TextContent(type="text", text=text)])

    @mcp.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Ask the client's LLM to answer `prompt` (sampling/createMessage) and return its answer."""
        require_client(ctx, types.ClientCapabilities(sampling=types.SamplingCapability()), "sampling")
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        result = await ctx.session.create_message([message], max_tokens=100, related_request_id=ctx.request_id)
        answer = result.content.text if isinstance(result.content, types.TextContent) else repr(result.content)
        return f"LLM response: {answer}"

    @mcp.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Ask the user for a username and an email (elicitation/create) and return the answer."""
        result = await elicit(ctx, message, USER_INFO_SCHEMA)
        return f"User response: action={result.action}, content={json.dumps(result.content)}"

    @mcp.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Elicit a form whose string, integer, number, enum and boolean fields all have defaults (SEP-1034)."""
        result = await elicit(ctx, "Please review your information", DEFAULTS_SCHEMA)
        return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"

    @mcp.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Elicit a form using all five enum schema shapes (SEP-1330)."""
        result = await elicit(ctx, "Please pick some options", ENUMS_SCHEMA)
        return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"

    # Resources

    @mcp.resource("test://static-text", mime_type="text/plain")
    def static_text() -> str:
        """A fixed text resource."""
        return "This is the content of the static text resource."

    @mcp.resource("test://static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        """A fixed binary resource (a 1x1 PNG)."""
        return base64.b64decode(PNG_1X1)

    @mcp.resource("test://template/{id}/data", mime_type="application/json")
    def template_data(id: str) -> str:  # noqa: A002 - the parameter must match the template's {id}
        """JSON data for the given id."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @mcp.resource("test://watched-resource", mime_type="text/plain")
    def watched_resource() -> str:
        """A resource clients may subscribe to."""
        return "This is the content of the watched resource."

    async def check_subscribable(uri: AnyUrl) -> None:
        # No resource here ever changes, so a subscription never has an update to send: (un)subscribing
        # only has to name an existing resource.
        if str(uri) not in {str(r.uri) for r in await mcp.list_resources()}:
            raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}"))

    lowlevel.subscribe_resource()(check_subscribable)
    lowlevel.unsubscribe_resource()(check_subscribable)
    base_capabilities = lowlevel.get_capabilities

    def capabilities(options: NotificationOptions, experimental: dict[str, dict[str, Any]]) -> types.ServerCapabilities:
        # The SDK advertises resources.subscribe=false even with subscribe handlers registered.
        caps = base_capabilities(options, experimental)
        caps.resources = types.ResourcesCapability(subscribe=True, listChanged=options.resources_changed)
        return caps

    lowlevel.get_capabilities = capabilities  # type: ignore[method-assign, assignment]

    # Prompts

    @mcp.prompt()
    def test_simple_prompt() -> str:
        """A prompt without arguments."""
        return "This is a simple prompt for testing."

    @mcp.prompt()
    def test_prompt_with_arguments(
        arg1: Annotated[str, Field(description="First test argument")],
        arg2: Annotated[str, Field(description="Second test argument")],
    ) -> str:
        """A prompt that substitutes two arguments."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @mcp.prompt()
    def test_prompt_with_embedded_resource(
        resourceUri: Annotated[str, Field(description="URI of the resource to embed")],  # noqa: N803 - suite's name
    ) -> list[Message]:
        """A prompt that embeds a text resource under the given URI."""
        resource = types.TextResourceContents(
            uri=AnyUrl(resourceUri), mimeType="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(types.EmbeddedResource(type="resource", resource=resource)),
            UserMessage("Please process the embedded resource above."),
        ]

    @mcp.prompt()
    def test_prompt_with_image() -> list[Message]:
        """A prompt that carries an image."""
        return [
            UserMessage(types.ImageContent(type="image", data=PNG_1X1, mimeType="image/png")),
            UserMessage("Please analyze the image above."),
        ]

    # Utilities

    @mcp.completion()
    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.Completion:
        """Suggest test_prompt_with_arguments argument values starting with what was typed; nothing else."""
        prompt_args = isinstance(ref, types.PromptReference) and ref.name == "test_prompt_with_arguments"
        values = [v for v in PROMPT_ARG_SUGGESTIONS if prompt_args and v.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), hasMore=False)

    @lowlevel.set_logging_level()
    async def set_level(level: types.LoggingLevel) -> None:
        # Registering this handler also advertises the `logging` server capability.
        log_levels[lowlevel.request_context.session] = level

    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build_server(name).streamable_http_app())
