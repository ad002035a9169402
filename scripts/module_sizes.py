"""List the modules of service/toolsearch over 400 lines and the functions over 60 (the size rule of
docs/development.md); exit 1 when there are any. Functions are measured by their source lines
(docstring included); literal tables sit at module level and are never counted as functions."""

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "toolsearch"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def oversized(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(package.parent)
        lines = source.count("\n")
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno}: {node.name} is {length} lines")
    return found


if __name__ == "__main__":
    problems = oversized()
    print("\n".join(problems) or "every module and function within its size")
    sys.exit(1 if problems else 0)
