"""The newcomer's map: docs/development.md's source tree names every package and module of
`service/toolsearch`, and the top of the package stays a short list (subpackages by family)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "toolsearch"
DEVELOPMENT = PACKAGE.parents[1] / "docs" / "development.md"
MAX_TOP_MODULES = 15


def _tree() -> str:
    found = re.search(r"```\nservice/toolsearch/.*?```", DEVELOPMENT.read_text(encoding="utf-8"), re.S)
    assert found, "docs/development.md has no source tree"
    return found.group(0)


def test_the_tree_names_every_module_and_package() -> None:
    tree = _tree()
    missing = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py" and not re.search(rf"(?<![\w.]){re.escape(path.name)}\b", tree)
    ]
    missing += [
        str(path.relative_to(PACKAGE)) + "/"
        for path in sorted(PACKAGE.rglob("__init__.py"))
        if path.parent != PACKAGE and f"{path.parent.name}/" not in tree
    ]
    assert missing == [], f"add these to docs/development.md's tree: {missing}"


def test_the_top_of_the_package_holds_at_most_fifteen_modules() -> None:
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(modules) <= MAX_TOP_MODULES, modules


def test_every_package_says_what_it_offers() -> None:
    silent = [
        str(init.relative_to(PACKAGE))
        for init in sorted(PACKAGE.rglob("__init__.py"))
        if not init.read_text(encoding="utf-8").lstrip().startswith('"""')
    ]
    assert silent == []
