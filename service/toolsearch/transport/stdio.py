"""stdio transport: newline-delimited JSON-RPC on stdin/stdout, for clients that start servers as commands.

There is no caller to take credentials from, so upstream requests carry no Authorization header:
use it with upstreams that need none (README says so).
"""

from __future__ import annotations

import asyncio
import sys
from typing import BinaryIO

import orjson

from toolsearch.mcp.caller import CallerHeaders
from toolsearch.mcp.jsonrpc import JsonRpcError, Message, error_response, parse_message
from toolsearch.proxy import Proxy
from toolsearch.server import RequestContext

_CONTEXT = RequestContext(caller=CallerHeaders(), headers=None)


async def serve_stdio(proxy: Proxy, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Answer requests until stdin closes; requests run concurrently, answers are written whole."""
    reader = stdin or sys.stdin.buffer
    writer = stdout or sys.stdout.buffer
    write_lock = asyncio.Lock()
    pending: set[asyncio.Task[None]] = set()

    async def write(response: dict[str, object]) -> None:
        async with write_lock:
            writer.write(orjson.dumps(response) + b"\n")
            writer.flush()

    async def answer(message: Message) -> None:
        reply = await proxy.server.handle(message, _CONTEXT)
        await write(reply.message())

    loop = asyncio.get_running_loop()
    lines = proxy.supervisor.pool("stdin", 1)  # a blocking read, ended by stdin's end before closing
    try:
        while line := await loop.run_in_executor(lines, reader.readline):
            if not line.strip():
                continue
            try:
                message = parse_message(line)
            except JsonRpcError as error:
                await write(error_response(error.request_id, error))
                continue
            if message.is_notification or message.is_response:
                continue
            task = asyncio.create_task(answer(message))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)
    finally:
        await proxy.aclose()
