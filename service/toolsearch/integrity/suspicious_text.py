"""Tool text that addresses the model: a title, description or any string of the input schema that
tells it to ignore other tools or the user, to always call this one, to keep something from the user
or to pass secrets along (`text_reasons`). Telling it how to use the tool well is not flagged.

The text is read as the model would see it, with look-alike letters made Latin (`skeletons`), so a
Cyrillic `і` in `іgnore` hides nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from typing import Final

from toolsearch.integrity.skeletons import latin_letters
from toolsearch.search.documents import tool_fields
from toolsearch.tool import Tool, per_tool
from toolsearch.untrusted import clean_text

_SCANNED_CHARS: Final = 20_000
"""Text past this is not scanned (as it is not searched): bounds the work of a junk definition."""
_GAP = r"[^.!?\n]{0,60}?"
"""Words between the parts of one instruction, within one sentence."""
_TOOLS = r"(?:other|another|any other|the other|remaining|all other)\s+(?:tools?|functions?|servers?)"
_SECRETS = (
    r"(?:api[ _-]?keys?|access[ _-]?tokens?|tokens|passwords|secrets|credentials|private[ _-]?keys?"
    r"|ssh[ _-]?keys?|id_rsa|\.ssh\b|\.env\b|\.aws\b|/etc/passwd|environment variables|session cookies)"
)
# Written in lower case: ASCII text is matched lower-cased, case-sensitively (`_text_reasons`).
_PATTERNS: Final[dict[str, tuple[str, ...]]] = {
    "instructs-about-other-tools": (
        rf"\b(?:do not|don't|never|avoid|stop)\s+(?:use|using|call|calling|invoke|run|trust){_GAP}\b{_TOOLS}",
        rf"\binstead of\s+(?:using|calling|invoking)?\s*{_TOOLS}",
        rf"\b{_TOOLS}\s+(?:are|is)\s+(?:deprecated|broken|unsafe|disabled|outdated|malicious)\b",
        r"\binstead of the others\b",
        r"\b(?:supersedes?|outranks?|overrides?|replaces?|takes? precedence over)\s+(?:every|all|any)\b"
        rf"{_GAP}\b(?:tools?|functions?|instructions)\b",
        rf"\b(?:remaining|other)\s+(?:tools?|functions?){_GAP}\b(?:obsolete|deprecated|broken|unsafe|outdated"
        r"|unreliable|malicious)\b",
        r"\b(?:prefer|choose|pick|select|use)\s+this\s+(?:tool|function|one)\s+over\s+(?:all|any|every|the)\s+"
        r"(?:others?|alternatives?|other)\b",
        r"\beven\s+(?:when|if)\s+(?:another|other|a different)\s+tools?\b",
    ),
    "instructs-to-ignore": (
        r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier"
        r"|other|your|system|existing)\s+(?:instructions|rules|prompts?|tools|guidelines|directions)\b",
        r"\bignore (?:all|any) other\b",
        r"\b(?:ignore|disregard|forget)\s+(?:the\s+)?(?:rest of the\s+)?(?:tool list|tools list|list of tools"
        r"|available tools|other tools)\b",
    ),
    "instructs-to-always-call": (
        r"\balways\s+(?:call|use|invoke|run|prefer|choose|pick|select)\s+this\s+(?:tool|function|one)\b",
        rf"\b(?:call|use|invoke|run)\s+this\s+(?:tool|function|one){_GAP}\bbefore\s+(?:any|every|all)\s+(?:other\s+)?tools?\b",
        r"<\s*/?\s*(?:important|system)\s*>",
        r"\b(?:route|send|direct|pass)\s+(?:all|every|each|any)\s+(?:requests?|tasks?|queries|questions?|calls?)"
        r"\s+(?:through|to|via)\s+(?:this|it)\b",
        r"\b(?:select|use|call|invoke|choose|pick)\s+this\s+(?:tool|function|one)\s+for\s+(?:every|all|any|each)\s+"
        r"(?:tasks?|requests?|quer(?:y|ies)|questions?|purposes?)\b",
        r"\bonly\s+this\s+(?:one|tool|function)\s+(?:should|must|may|can)\s+be\s+used\b",
        rf"\bmust\s+(?:first\s+)?(?:invoke|call|use|run)\s+this\s+(?:tool|function){_GAP}\bbefore\s+"
        r"(?:answering|responding|replying|anything|doing anything)\b",
    ),
    "hides-from-user": (
        r"\b(?:do not|don't|never)\s+(?:tell|inform|let|notify|alert)\s+the\s+user\s+"
        r"(?:about|know|that you)\b",
        r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b",
        r"\b(?:the\s+)?user\s+(?:must|should)\s+not\s+(?:know|see|be told)\b",
        rf"\b(?:never|do not|don't)\s+(?:mention|reveal|disclose)\b{_GAP}"
        r"\b(?:to\s+the\s+user|that\s+this\s+tool)\b",
    ),
    "claims-authority": (
        r"\b(?:treat|consider|read)\s+this\s+(?:description|text|message)\s+as\s+(?:an?\s+)?(?:system|developer)\s+"
        r"(?:instruction|prompt|message)",
        r"\b(?:outranks?|overrides?|supersedes?|takes? precedence over)\s+(?:the\s+)?"
        r"(?:user|system prompt)\b",
        r"\bwhatever\s+the\s+user\s+(?:asks|says|wants|requests)\b",
    ),
    "asks-for-secrets": (
        rf"\b(?:pass|send|include|attach|forward|upload|copy|paste|put)\b{_GAP}\b(?:the\s+)?user'?s?\s+{_SECRETS}",
        rf"\b(?:read|send|include|attach|forward|upload|cat)\b{_GAP}(?:~/\.ssh|id_rsa|\.aws/credentials|/etc/shadow)",
        rf"\b(?:send|include|attach|forward|upload)\b{_GAP}\b(?:all|every|any)\s+{_SECRETS}",
    ),
}
_COMPILED: Final = {
    reason: re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)
    for reason, patterns in _PATTERNS.items()
}
TEXT_REASONS: Final = tuple(_PATTERNS)
"""Every reason a tool's text may be flagged for."""
_EVERY_PATTERN = [pattern for patterns in _PATTERNS.values() for pattern in patterns]
_AT_WORDS = "|".join(f"(?:{pattern[2:]})" for pattern in _EVERY_PATTERN if pattern.startswith(r"\b"))
# The patterns opening with `\b` go on with a letter, so their `\b` is "no word character before":
# said once in front of them all, it scans in 60% of the time their own `\b`s take.
_ANY_PATTERN = "|".join([rf"(?<!\w)(?:{_AT_WORDS})", *(p for p in _EVERY_PATTERN if not p.startswith(r"\b"))])
_ANY_REASON: Final = re.compile(_ANY_PATTERN, re.IGNORECASE)
"""Whether a text matches any reason's pattern: one scan instead of one per reason, and nearly every
text matches none."""
_ANY_REASON_ASCII: Final = re.compile(_ANY_PATTERN, re.ASCII)
"""The same for ASCII text in lower case, in less than half the time: Unicode's case-insensitive
matches of ASCII patterns in ASCII text are ASCII's, and lower-case patterns match lower-cased text
where they match the text in any case."""


@lru_cache(maxsize=16384)
def _text_reasons(text: str) -> tuple[str, ...]:
    folded = " ".join(unicodedata.normalize("NFKC", clean_text(text[:_SCANNED_CHARS])).split())
    folded = latin_letters(folded)
    if folded.isascii():
        if not _ANY_REASON_ASCII.search(folded.lower()):
            return ()
    elif not _ANY_REASON.search(folded):
        return ()
    return tuple(reason for reason, pattern in _COMPILED.items() if pattern.search(folded))


@per_tool
def text_reasons(tool: Tool) -> tuple[str, ...]:
    """Why the text of `tool` addresses the model (of `TEXT_REASONS`, in their order); () when
    it does not. Read: its title, description and every string of its input schema (parameter
    descriptions, titles, enum values, defaults, examples): the model reads them all."""
    fields = tool_fields(tool)
    return _text_reasons(
        ". ".join((fields["title"], fields["description"], *_schema_strings(tool.input_schema)))
    )


def _schema_strings(schema: Mapping[str, object]) -> list[str]:
    """The strings of a schema (not its keys), depth first, until `_SCANNED_CHARS` of them."""
    found: list[str] = []
    total = 0
    stack: list[object] = [schema]
    while stack and total < _SCANNED_CHARS:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
            total += len(value)
        elif isinstance(value, Mapping):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return found
