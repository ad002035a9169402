"""Tool names: the server/tool split of agentgateway's names, and the tool a caller meant."""

from __future__ import annotations

from toolsearch.naming import intended_name, similar_names, split_qualified_name

NAMES = ["github_create_issue", "github_list_issues", "slack_post_message", "gitlab_create_issue"]


def test_an_agentgateway_name_splits_into_server_and_tool_at_the_first_underscore() -> None:
    assert split_qualified_name("github_create_issue") == ("github", "create_issue")
    assert split_qualified_name("brave-search_brave_web_search") == ("brave-search", "brave_web_search")


def test_a_name_without_underscore_has_no_server() -> None:
    assert split_qualified_name("search") == ("", "search")
    assert split_qualified_name("_private") == ("", "_private")


def test_a_name_without_its_server_prefix_means_the_one_tool_it_ends() -> None:
    assert intended_name("post_message", NAMES) == "slack_post_message"


def test_a_tool_name_two_servers_share_means_neither() -> None:
    assert intended_name("create_issue", NAMES) is None


def test_a_clear_typo_means_the_tool_it_misspells() -> None:
    assert intended_name("github_list_isues", NAMES) == "github_list_issues"


def test_similar_names_come_closest_first() -> None:
    assert similar_names("github_create", NAMES)[0] == "github_create_issue"


def test_a_name_like_no_tool_has_no_similar_names() -> None:
    assert similar_names("zzzz", NAMES) == []
