"""Reads nobody annotated: whether a tool without a `readOnlyHint` only reads, judged by its name,
description and schema.

Upstreams leave most tools unannotated (2,084 of the 5,190 recorded), and an unannotated tool
counts as a write (`ToolPolicy`), so an agent sends a plain lookup through `call_write_tool`,
which clients put behind a person's approval. The answer shows this judgement apart from the
upstream's word (`readOnly: "inferred"`), and `--read-inferred` lets `call_read_tool(s)` take
such tools; `--write-tools` still wins.

The rules lean one way: a write judged a read could run unapproved, a read judged a write only
costs an approval. A tool is an inferred read when

- its name has a reading verb (`get`, `list`, `search`, `query`, `describe`...; in any case:
  `TwilioApiV2010--FetchBalance`): the name, not the description, must say it;
- no word of its name is an acting verb (`create`, `send`, `run`, `navigate`...: `get_or_create`
  is a write; a verb that is also a noun, `build` or `call`, acts only first or after "and"/"or":
  `get_build_status` reads);
- and then either its description says it is read-only ("Run a read-only SQL query": a claim its
  name must back, so a `wipe` described "Read-only" stays a write), or no word of the
  description's first sentence acts ("Gets the lock and releases it") and none of its parameters
  names content to write or an operation to choose (`body`, `sql`, `command`, `action`...).

Measured on a labelled sample of recorded unannotated tools (docs/search-quality.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from toolsearch.naming import split_qualified_name
from toolsearch.tool import Tool

READING_VERBS: Final = frozenset(
    """get list search read fetch find describe show view lookup retrieve browse inspect count preview
    info whoami status query explain summarize compare diff validate gets lists searches reads
    fetches finds describes shows retrieves returns""".split()  # noqa: SIM905
)
"""Actions that only look."""
ACTING_VERBS: Final = frozenset(
    """create update delete set add remove send post put patch write modify edit move copy upload run
    execute exec start stop restart deploy trigger cancel close merge approve assign invite publish
    archive unarchive enable disable toggle install uninstall apply import sync submit reply comment
    schedule book pay transfer rename reset rotate revoke grant lock unlock clear purge kill scale
    rollback push commit fork clone mark subscribe unsubscribe login logout save store register
    snooze acknowledge ack mute unmute follow unfollow star unstar pin unpin tag untag label link
    unlink attach detach generate navigate click type fill press select hover drag drop evaluate
    upsert insert replace invoke call emit notify invalidate flush refresh reload cleanup prune
    terminate destroy truncate alter suspend resume pause play block unblock ban unban enroll
    provision allocate release claim reserve request order buy purchase refund charge capture void
    accept decline reject respond share unshare duplicate convert transcode render build compile
    test train tune predict batch migrate backup restore mount unmount sign encrypt decrypt rerun
    retry escalate reassign activate deactivate confirm connect disconnect open focus resize scroll
    record crawl scrape watch bulk mutate download export resolve analyze audit manage receive
    dequeue pop consume""".split()  # noqa: SIM905
)
"""Actions that change something (or start work somewhere, write a file, or cost money)."""
NOUN_LIKE: Final = frozenset(
    """build test order request record label tag comment link release share call type batch backup
    capture block charge book schedule store pin star mark post map state status drop play watch
    export download""".split()  # noqa: SIM905
)
"""Acting verbs that are also nouns ("get build status", "list labels", "OnCall"): they act only
first in a name or sentence, or after "and" or "or" ("get_or_create")."""
_WRITE_PARAMETERS: Final = frozenset(
    """body content contents data text message sql command commands script code payload patch value
    values file_content html markdown new_name replacement fields properties action actions
    operation operations method visibility lease ttl expire expiration""".split()  # noqa: SIM905
)
"""Parameters whose value is something to write or to run, one of several operations to choose
(a tool of many actions), or a hold taken on what is read (a queue message's visibility)."""
_ENDINGS: Final = ("s", "es", "d", "ed", "ing")
_READ_ONLY_SAID = re.compile(r"\bread[- ]?only\b", re.IGNORECASE)
_NOT_READ_ONLY = re.compile(r"\b(not|non)[- ]read[- ]?only\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_FIRST_SENTENCE = re.compile(r"^[^.!?\n]*")


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _acts(words: list[str]) -> bool:
    """Whether `words` (a name's or a sentence's) say an action: an acting verb anywhere, one that is
    also a noun only first or after "and" / "or"; the first two words also inflected ("Downloads")."""
    for place, word in enumerate(words):
        verb_place = place == 0 or words[place - 1] in ("and", "or")
        if word in ACTING_VERBS and (verb_place or word not in NOUN_LIKE):
            return True
        if place < 2 and any(
            word.removesuffix(end) in ACTING_VERBS for end in _ENDINGS if word.endswith(end)
        ):
            return True
    return False


def inferred_read(tool: Tool) -> bool:
    """Whether `tool`, unannotated, is judged a read by the rules above (False when its upstream
    annotated it either way: its word stands)."""
    if "readOnlyHint" in tool.annotations:
        return False
    name_words = _words(split_qualified_name(tool.name)[1] or tool.name)
    description = tool.description.strip()
    first_sentence = _FIRST_SENTENCE.match(description)
    sentence_words = _words(first_sentence.group() if first_sentence else "")
    said_read_only = bool(_READ_ONLY_SAID.search(description)) and not _NOT_READ_ONLY.search(description)
    reading = READING_VERBS.intersection(name_words)
    if _acts(name_words) or not reading:
        return False
    if said_read_only:
        return True
    return not _acts(sentence_words) and not _takes_content(tool.input_schema)


def _takes_content(schema: Mapping[str, object]) -> bool:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return False
    return any(_WRITE_PARAMETERS.intersection(_words(str(name))) for name in properties)
