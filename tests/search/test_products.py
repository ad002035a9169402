"""What a request names, read against the recorded catalog (`search.products`): the servers whose
product it names, whole words only, and the names it gives that no tool mentions."""

from __future__ import annotations

import pytest

from bench.stats import dev_queries
from toolsearch.naming import split_qualified_name
from toolsearch.search.products import CatalogProducts, catalog_products, request_products
from toolsearch.testing import recorded_tools
from toolsearch.tool import ToolInterner


@pytest.fixture(scope="module")
def catalog() -> CatalogProducts:
    interner = ToolInterner()
    return catalog_products([interner.intern(definition) for definition in recorded_tools()])


@pytest.mark.parametrize(
    ("request_text", "servers"),
    [
        ("add a row in Google Sheets", ("gsheets",)),
        ("what does the AWS documentation say about S3 lifecycle rules", ("aws-documentation",)),
        ("Send an email in Outlook", ("ms365",)),
        ("post the release notes to Microsoft Teams", ("ms365", "teams")),
        ("list the objects in my GCS bucket", ("gcs",)),
        ("Draft a letter in Word", ("word",)),
        ("Grafanoje pažymėk ant grafikų išleidimą", ("grafana-leval", "grafana-py")),
        ("Paleisk užklausą Jiroje", ("jira-aashari", "jira-cloud", "jira-nexus")),
        ("在 GitHub 上开一个 issue", ("github", "github-mcp-server")),
    ],
)
def test_a_request_names_the_servers_whose_product_it_names(
    catalog: CatalogProducts, request_text: str, servers: tuple[str, ...]
) -> None:
    assert request_products(request_text, catalog).servers == servers


@pytest.mark.parametrize(
    "request_text",
    [
        "Create a project for the launch",
        "make a word cloud of these reviews",
        "search the web for the latest release notes",
        "upgrade the chart of our Helm release",
        "restart the billing-service deployment",
        "order a pizza",
        "what time is it in Tokyo",
        "scrape docs.stripe.com/api and src/billing/invoice.ts",
    ],
)
def test_common_words_and_identifiers_name_no_server(catalog: CatalogProducts, request_text: str) -> None:
    assert request_products(request_text, catalog).servers == ()


@pytest.mark.parametrize(
    ("request_text", "unknown"),
    [
        ("approve a leave request in BambooHR", ("BambooHR",)),
        ("print shipping labels on a Zebra printer", ("Zebra",)),
        ("Upload build 4.12.0 to TestFlight for the 'Beta QA' group", ("TestFlight",)),
        ("在企业微信里用 WeCom 给王磊开个账号", ("WeCom",)),
    ],
)
def test_a_proper_name_no_tool_mentions_is_unknown_but_not_a_quoted_value(
    catalog: CatalogProducts, request_text: str, unknown: tuple[str, ...]
) -> None:
    assert request_products(request_text, catalog).unknown == unknown


def test_code_and_quoted_values_are_no_names(catalog: CatalogProducts) -> None:
    request = 'Where is parseInvoice called, and why is the "Spring Launch" app OutOfSync? ¿Tengo permiso?'
    assert request_products(request, catalog).unknown == ()


@pytest.mark.parametrize(
    "request_text",
    [
        "Swap me out of the on-call rotation this Saturday, and again in August",
        'count the sessions whose createdAt is after ISODate("2025-05-01")',
        "把所有带 nightly 标签的 droplet 都开机",
    ],
)
def test_days_months_calls_and_lowercase_words_in_chinese_are_no_names(
    catalog: CatalogProducts, request_text: str
) -> None:
    assert request_products(request_text, catalog).unknown == ()


def test_a_product_the_catalog_has_is_not_unknown(catalog: CatalogProducts) -> None:
    assert request_products("open an issue in GitHub for the Airtable sync", catalog).unknown == ()


def test_on_the_dev_set_named_requests_name_their_server_and_the_others_none(
    catalog: CatalogProducts,
) -> None:
    named, unnamed = [], []
    for query in dev_queries():
        servers = set(request_products(query["query"], catalog).servers)
        if query["kind"] == "named":
            named.append(any(split_qualified_name(name)[0] in servers for name in query["gold"]))
        else:
            unnamed.append(not servers)
    # 81 of 85 and 164 of 175 when written (docs/search-quality.md): floors against regressions.
    assert sum(named) / len(named) >= 0.95
    assert sum(unnamed) / len(unnamed) >= 0.93
