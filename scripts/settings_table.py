"""Write the configuration table of docs/configuration.md from `Settings`: run it after adding one."""

import re
from pathlib import Path

from toolsearch.settings import Settings

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"


def settings_table() -> str:
    rows = ["| flag | environment variable | default | meaning |", "|---|---|---|---|"]
    for name, info in Settings.model_fields.items():
        default = info.get_default(call_default_factory=True)
        shown = ",".join(default) if isinstance(default, list) else default
        shown = f"`{shown}`" if shown not in ("", None, []) else "(none)"
        flag = "--" + name.replace("_", "-")
        rows.append(f"| `{flag}` | `TOOLSEARCH_{name.upper()}` | {shown} | {info.description} |")
    return "\n".join(rows)


def main() -> None:
    text = PAGE.read_text()
    block = f"{START}\n{settings_table()}\n{END}"
    PAGE.write_text(re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL))


if __name__ == "__main__":
    main()
