"""Reading a server-sent events body: the `data` of each event, as the streamable HTTP transport
sends JSON-RPC messages on it.

Lines end only at CR, LF and CRLF, as the SSE format says: `str.splitlines` (and httpx's
`aiter_lines`) also split at U+2028, U+0085 and more, which JSON text holds unescaped.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator

_LINE_END = re.compile(r"\r\n|\r|\n")


async def sse_lines(chunks: AsyncIterable[str]) -> AsyncIterator[str]:
    """The lines of an SSE body arriving in `chunks` of text, however the chunks cut it."""
    partial: list[str] = []
    held_cr = False
    async for chunk in chunks:
        text = "\r" + chunk if held_cr else chunk
        held_cr = text.endswith("\r")  # perhaps the first half of a CRLF: decide with the next chunk
        pieces = _LINE_END.split(text[:-1] if held_cr else text)
        if len(pieces) > 1:
            yield "".join(partial) + pieces[0]
            for line in pieces[1:-1]:
                yield line
            partial.clear()
        partial.append(pieces[-1])
    if held_cr:
        yield "".join(partial)


async def sse_data(chunks: AsyncIterable[str]) -> AsyncIterator[str]:
    """The data of each event of an SSE body (its `data:` lines joined by LF); events without data,
    comments and other fields are skipped."""
    data: list[str] = []
    async for line in sse_lines(chunks):
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            yield "\n".join(data)
            data = []
