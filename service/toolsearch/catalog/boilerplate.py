"""Server boilerplate: a sentence that most tools of one server share ("This is the public Twilio
REST API.") tells an agent nothing about which of them to pick, so search answers leave it out of
their descriptions (`metatools.answer`; `describe_tool` keeps everything).

Read once per toolset, a pure function of its tools: each tool's description is split into
sentences (a stop, `!` or `?` before a space, or a line break), and a sentence is a server's
boilerplate when more than half of that server's tools, and at least `MIN_TOOLS` of them, have it.
Sentences are what a stop ends: headings ("Returns:"), list items and code are left alone.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Final

from toolsearch.naming import split_qualified_name
from toolsearch.tool import Tool

MIN_TOOLS: Final = 4
"""A server of fewer tools has no boilerplate: two or three tools may share a sentence that matters."""
MIN_WORDS: Final = 4
SHARE: Final = 0.5
"""The share of a server's tools that must have a sentence for it to be boilerplate (more than)."""
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+(?=\s|$)|(?=\n)|$)")


def _sentences(description: str) -> set[str]:
    """The sentences of `description`: of `MIN_WORDS` words or more, ended by a stop (headings such
    as "Returns:", list items and code are no sentences)."""
    pieces = (found.group().strip() for found in _SENTENCE.finditer(description))
    return {
        piece
        for piece in pieces
        if piece[:1].isalnum() and piece[-1] in ".!?" and len(piece.split()) >= MIN_WORDS
    }


def server_boilerplate(tools: Sequence[Tool]) -> dict[str, tuple[str, ...]]:
    """Each server's boilerplate sentences, longest first (servers without any left out)."""
    by_server: dict[str, list[Tool]] = defaultdict(list)
    for tool in tools:
        by_server[split_qualified_name(tool.name)[0]].append(tool)
    shared: dict[str, tuple[str, ...]] = {}
    for server, own in by_server.items():
        if len(own) < MIN_TOOLS:
            continue
        counts = Counter(sentence for tool in own for sentence in _sentences(tool.description))
        common = [sentence for sentence, count in counts.items() if count > SHARE * len(own)]
        if common:
            shared[server] = tuple(sorted(common, key=len, reverse=True))
    return shared


def without_boilerplate(description: str, boilerplate: Sequence[str]) -> str:
    """`description` without its server's `boilerplate` sentences; whole when nothing else is left."""
    text = description
    for sentence in boilerplate:
        text = text.replace(sentence, " ", 1)
    return text if text.strip(" \n.:-") else description
