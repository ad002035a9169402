"""Long requests: the dev set's English requests with a story around them, for `toolsearch eval`.

    python -m bench.long_requests      # writes bench/data/queries-dev-long-{tune,held}.jsonl

Agents often pass on a user's whole message (background, the ask, thanks), not the ask alone. Each
English servable dev request gets each of five contexts of a set around it (a preamble, a
postscript or both; written here, about no tool of the catalog): `tune` holds the contexts the
sentence ranking (`toolsearch.search.sentences`) was chosen on, `held` five others it was only
checked on. Ids are the request's own with `-c<context>` appended; gold tools, language and kind
are the request's. Deterministic: the files are committed, this rewrites them identically.
"""

from __future__ import annotations

import json
from typing import Any

from bench.stats import DEV_QUERIES, dev_queries

CONTEXTS = (
    (
        "Some background first. I have been working with our team on the quarterly update all week, and "
        "we keep losing track of what changed, who owns what and where the latest version of each thing "
        "lives. I would like to get this sorted before the review on Friday, so here is what I need right "
        "now: ",
        "",
    ),
    (
        "Hi! Long day here. We are moving a lot of our work between tools at the moment and I am trying to "
        "keep everything in order without breaking anything for the people who depend on it. ",
        " Thanks a lot, and sorry for the rush.",
    ),
    (
        "",
        " For context, my manager asked for this during this morning's standup and I promised to have it "
        "done before lunch, so please be quick. If something is unclear just make a reasonable assumption "
        "and tell me what you assumed.",
    ),
    (
        "Okay, next task. ",
        " After that we can go back to the report we were writing earlier, but this one comes first "
        "because the client is waiting on it.",
    ),
    (
        "I'm new to this setup and honestly a bit lost with all the different services we have connected. "
        "A colleague told me you could handle it. ",
        " Let me know if you need any more details from me.",
    ),
    (
        "Quick one before my meeting starts. ",
        " I don't need a long explanation, just get it done and give me a short summary of what happened.",
    ),
    (
        "We had an incident review yesterday and one of the follow-up items landed on my plate. I would "
        "rather not do it by hand since I always forget a step. ",
        "",
    ),
    (
        "",
        " This is part of the cleanup we are doing across all projects this month, so there may be more "
        "requests like this one later today.",
    ),
    (
        "Good morning! I hope your week is going well. Mine has been chaotic, with three deadlines and a "
        "new teammate to onboard. Anyway: ",
        " Much appreciated!",
    ),
    (
        "My previous attempt at this failed and I'm not sure why, maybe I used the wrong tool. Could you "
        "try it properly this time? ",
        " Double-check the result afterwards, please.",
    ),
)
SETS = {"tune": range(0, 5), "held": range(5, 10)}


def long_requests(requests: list[dict[str, Any]], contexts: range) -> list[dict[str, Any]]:
    """Each English servable request once per context of `contexts`, in request order."""
    return [
        {**request, "id": f"{request['id']}-c{number}", "query": before + request["query"] + after}
        for request in requests
        if request["lang"] == "en" and request["gold"]
        for number in contexts
        for before, after in [CONTEXTS[number]]
    ]


def main() -> None:
    for name, contexts in SETS.items():
        rows = long_requests(dev_queries(), contexts)
        path = DEV_QUERIES.with_name(f"queries-dev-long-{name}.jsonl")
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        print(f"{path}: {len(rows)} requests")


if __name__ == "__main__":
    main()
