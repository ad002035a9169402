"""The SSE reader, on text chunks as a response body arrives: events' data, whatever cuts the chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import pytest

from toolsearch.mcp.sse import sse_data, sse_lines


async def _chunks(pieces: Iterable[str]) -> AsyncIterator[str]:
    for piece in pieces:
        yield piece


async def _lines(pieces: Iterable[str]) -> list[str]:
    return [line async for line in sse_lines(_chunks(pieces))]


async def _data(pieces: Iterable[str]) -> list[str]:
    return [data async for data in sse_data(_chunks(pieces))]


@pytest.mark.parametrize(
    ("pieces", "lines"),
    [
        (["a\nb\n"], ["a", "b"]),
        (["a\r\nb\r\n"], ["a", "b"]),
        (["a\rb\r"], ["a", "b"]),
        (["a\r", "\nb\n"], ["a", "b"]),
        (["a\r", "b\n"], ["a", "b"]),
        (["par", "tial\n"], ["partial"]),
        (["a\n\nb\n"], ["a", "", "b"]),
        (["a\u2028b\x85c\n"], ["a\u2028b\x85c"]),
        (["unended"], []),
    ],
    ids=[
        "lf",
        "crlf",
        "cr",
        "crlf-split",
        "cr-then-text",
        "line-split",
        "blank-line",
        "unicode-breaks",
        "unended",
    ],
)
async def test_lines_end_only_at_cr_lf_and_crlf_however_the_chunks_cut_them(
    pieces: list[str], lines: list[str]
) -> None:
    assert await _lines(pieces) == lines


async def test_a_body_sent_one_character_at_a_time_reads_as_sent_whole() -> None:
    body = 'event: message\r\ndata: {"id": 1}\r\n\r\ndata: x\r\n\r\n'
    assert await _data(body) == await _data([body]) == ['{"id": 1}', "x"]


@pytest.mark.parametrize(
    ("body", "data"),
    [
        ("data: one\n\n", ["one"]),
        ("data:tight\n\n", ["tight"]),
        ("data:  two spaces\n\n", [" two spaces"]),
        ("data: first\ndata: second\n\n", ["first\nsecond"]),
        ("event: message\nid: 7\ndata: x\n\n", ["x"]),
        (": a comment\n\nevent: ping\n\n", []),
        ("data: a\n\ndata: b\n\n", ["a", "b"]),
        ("data: not ended\n", []),
    ],
    ids=[
        "one",
        "no-space",
        "one-space-stripped",
        "multi-line",
        "other-fields",
        "no-data",
        "two-events",
        "unended",
    ],
)
async def test_each_event_yields_its_data_lines_joined(body: str, data: list[str]) -> None:
    assert await _data([body]) == data
