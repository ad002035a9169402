"""Long requests: ranked whole and sentence by sentence, each tool adding its best sentence's score."""

from __future__ import annotations

import numpy as np
import pytest

from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.sentences import LONG_REQUEST_WORDS, MAX_SENTENCES, combined, sentences
from toolsearch.tool import ToolInterner

STORY = (
    "This week has been chaotic for the whole team, honestly. Three deadlines landed on the same day "
    "again and progress is slow. The quarterly reviews are coming up soon as well. Please put an event "
    "in my calendar for Thursday at nine."
)


def test_a_short_request_is_ranked_whole() -> None:
    assert sentences("Create an event. Then send the invitations to the team.") == []


def test_a_long_request_is_ranked_by_each_of_its_sentences() -> None:
    assert sentences(STORY) == [
        "This week has been chaotic for the whole team, honestly.",
        "Three deadlines landed on the same day again and progress is slow.",
        "The quarterly reviews are coming up soon as well.",
        "Please put an event in my calendar for Thursday at nine.",
    ]


def test_pieces_too_short_to_ask_for_anything_are_left_out() -> None:
    request = "Okay, thanks!\n" + " ".join(["word"] * LONG_REQUEST_WORDS) + ". Delete the old branch now."
    assert [piece.split()[0] for piece in sentences(request)] == ["word", "Delete"]


def test_a_request_of_one_long_sentence_is_ranked_whole() -> None:
    assert sentences(" ".join(["word"] * (LONG_REQUEST_WORDS + 5))) == []


def test_sentences_end_at_cjk_punctuation_and_line_breaks_too() -> None:
    request = " ".join(["a b c"] * 6) + "。 " + " ".join(["d e f"] * 6) + "\n" + "g h i"
    assert [piece[0] for piece in sentences(request)] == ["a", "d", "g"]


def test_only_the_longest_sentences_are_ranked_alone_in_their_order() -> None:
    # Sentence n has 3 + (n * 5) % 8 words: lengths all different, in no order.
    pieces = [" ".join([f"w{number}"] * (3 + (number * 5) % 8)) + "." for number in range(MAX_SENTENCES + 2)]
    longest = sorted(pieces, key=lambda piece: -len(piece.split()))[:MAX_SENTENCES]
    assert sentences(" ".join(pieces)) == [piece for piece in pieces if piece in longest]


def test_a_tools_score_is_its_whole_score_plus_its_best_sentence_score() -> None:
    whole = np.array([1.0, 2.0, 0.5])
    by_sentence = [np.array([0.0, 1.0, 3.0]), np.array([2.0, 0.0, 1.0])]
    assert combined(whole, by_sentence).tolist() == [3.0, 3.0, 3.5]


def test_a_tool_a_ranking_leaves_out_counts_as_that_rankings_lowest() -> None:
    whole = np.array([2.0, -np.inf, 1.0])
    by_sentence = [np.array([-np.inf, 4.0, 0.0])]
    assert combined(whole, by_sentence).tolist() == [2.0, 5.0, 1.0]


def test_the_tool_a_long_request_asks_for_outranks_one_its_story_mentions() -> None:
    interner = ToolInterner()
    tools = [
        interner.intern({"name": name, "description": description, "inputSchema": {}})
        for name, description in (
            ("notes_summary", "Summary of the team progress: deadlines, reviews and plans."),
            ("calendar_create_event", "Create an event in a calendar."),
            ("files_read_file", "Read a file."),
            ("mail_send_email", "Send an email to someone."),
        )
    ]
    index = LexicalIndex.build(tools)
    whole = index.scores(STORY)
    assert tools[int(np.argmax(whole))].name == "notes_summary"  # the story's words, spread out, win
    assert tools[index.search(STORY, 1)[0].position].name == "calendar_create_event"


@pytest.mark.parametrize("request_text", ["", "   ", "\n\n\n"])
def test_an_empty_request_has_no_sentences(request_text: str) -> None:
    assert sentences(request_text) == []
