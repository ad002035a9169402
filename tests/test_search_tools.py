"""search_tools and describe_tool through the proxy, as a model would use them."""

from __future__ import annotations

from tests.conftest import TOKEN_X, call_json, call_text, connect


def _names(answer: dict, query_index: int = 0) -> list[str]:
    return [tool["name"] for tool in answer["results"][query_index]["tools"]]


async def test_search_in_english_finds_the_tool(proxy_url: str, mode: str) -> None:
    async with connect(proxy_url, TOKEN_X, mode) as client:
        answer = await call_json(client, "search_tools", {"query": "open a new issue in a GitHub repository"})
    assert "github_create_issue" in _names(answer)[:3]


async def test_search_in_lithuanian_finds_the_tool(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"query": "Slack kanale paskelbk žinutę"})
    assert "slack_slack_post_message" in _names(answer)[:5]


async def test_search_in_japanese_finds_the_tool(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"query": "Slack のチャンネル一覧 channels"})
    assert "slack_slack_list_channels" in _names(answer)[:5]


async def test_search_reports_the_catalog_size(proxy_url: str, x_names: set[str]) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"query": "current time"})
    assert answer["total"] == len(x_names)


async def test_search_results_say_whether_a_tool_is_read_only(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"query": "current time in a timezone", "limit": 3})
    tools = {tool["name"]: tool for tool in answer["results"][0]["tools"]}
    assert tools["time_get_current_time"]["readOnly"] is True


async def test_search_gives_schemas_to_the_leaders_only_and_the_rest_a_name_and_a_line(
    proxy_url: str,
) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"query": "calendar events", "limit": 8})
    tools = answer["results"][0]["tools"]
    assert "inputSchema" in tools[0]
    assert all(set(tool) <= {"name", "description", "readOnly", "alsoAs"} for tool in tools[3:])


async def test_search_without_schemas_omits_them(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"query": "calendar events", "schemas": False})
    assert all("inputSchema" not in tool for tool in answer["results"][0]["tools"])


async def test_search_answers_several_queries_at_once(proxy_url: str) -> None:
    queries = ["list files in a directory", "stock price of a ticker"]
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"queries": queries, "limit": 3})
    assert [result["query"] for result in answer["results"]] == queries
    assert _names(answer, 0)[0].startswith("filesystem_")
    assert _names(answer, 1)[0].startswith("yfinance_")


async def test_search_respects_the_limit(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "search_tools", {"query": "list", "limit": 2})
    assert len(_names(answer)) == 2


async def test_search_without_a_query_says_what_it_needs(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "search_tools", {})
    assert is_error
    assert '"query"' in text


async def test_search_with_a_bad_limit_names_the_problem_and_the_schema(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        is_error, text = await call_text(client, "search_tools", {"query": "x", "limit": 100})
    assert is_error
    assert "at /limit: 100 is greater than the maximum of 25" in text
    assert "Input schema:" in text


async def test_describe_returns_full_definitions(proxy_url: str, catalog_tools) -> None:
    recorded = next(tool for tool in catalog_tools if tool["name"] == "github_create_issue")
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(client, "describe_tool", {"names": ["github_create_issue"]})
    described = answer["tools"][0]
    assert described["inputSchema"] == recorded["inputSchema"]
    assert described["description"] == recorded["description"]
    assert "unknown" not in answer


async def test_describe_with_a_typo_suggests_the_similar_tool(proxy_url: str) -> None:
    async with connect(proxy_url, TOKEN_X) as client:
        answer = await call_json(
            client, "describe_tool", {"names": ["github_create_isue", "time_get_current_time"]}
        )
    assert [tool["name"] for tool in answer["tools"]] == ["time_get_current_time"]
    assert answer["unknown"][0]["name"] == "github_create_isue"
    assert answer["unknown"][0]["similar"][0] == "github_create_issue"
