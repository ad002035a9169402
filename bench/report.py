"""Section results, the machine they ran on, and how they are written: JSON, markdown, plots, stdout."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.processes import REPO_DIR

RESULTS_DIR = REPO_DIR / "bench" / "results"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Floor:
    """One of the issue's floors: what it asks, what was measured, and whether it is met (None: not
    measured in this run, with the reason in `measured`)."""

    floor: str
    measured: str
    met: bool | None


@dataclass
class Section:
    name: str
    data: dict[str, Any]
    tables: list[Table]
    floors: list[Floor] = field(default_factory=list)
    seconds: float = 0.0
    ran_at: str = ""
    machine: dict[str, Any] = field(default_factory=dict)
    """The machine as the section started (its load average says how busy it was)."""


def machine() -> dict[str, Any]:
    """What the numbers ran on: cores, CPU model, memory, Python, OS, load, and the commit."""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    memory_kb = next(
        (
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if "MemTotal" in line
        ),
        0,
    )
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(memory_kb / 1024**2, 1),
        "python": platform.python_version(),
        "os": platform.platform(),
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "commit": _git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(_git("status", "--porcelain")),
    }


def _git(*args: str) -> str:
    completed = subprocess.run(["git", *args], cwd=REPO_DIR, capture_output=True, text=True)
    return completed.stdout.strip()


# -- writing ------------------------------------------------------------------------------------------


def results_path(results_dir: Path, suffix: str, date: dt.date | None = None) -> Path:
    return results_dir / f"{(date or dt.date.today()).isoformat()}.{suffix}"


def save(sections: list[Section], results_dir: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """Merge these sections into today's results (a section run again replaces its earlier figures),
    write the JSON and the markdown, and return the whole document."""
    results_dir.mkdir(parents=True, exist_ok=True)
    json_path = results_path(results_dir, "json")
    document: dict[str, Any] = json.loads(json_path.read_text()) if json_path.exists() else {}
    document.setdefault("sections", {})
    for section in sections:
        document["sections"][section.name] = {**asdict(section), "settings": settings}
    document["machine"] = machine()
    json_path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    results_path(results_dir, "md").write_text(markdown(document))
    return document


def markdown(document: dict[str, Any]) -> str:
    """The whole results document as markdown: machine, floors, then every section's tables."""
    info = document["machine"]
    changes = " (with uncommitted changes)" if info["uncommitted_changes"] else ""
    lines = [
        f"# toolsearch benchmarks, {dt.date.today().isoformat()}",
        "",
        f"Machine: {info['nproc']} cores, {info['cpu']}, {info['memory_gib']} GiB, Python {info['python']}, "
        f"{info['os']}; commit {info['commit']}{changes}.",
        "",
    ]
    floors = [Floor(**floor) for section in document["sections"].values() for floor in section["floors"]]
    if floors:
        lines += render_table(floors_table(floors))
    for name, section in document["sections"].items():
        settings = section["settings"]
        mode = "quick" if settings.get("quick") else "full"
        lines += [
            f"## {name}",
            "",
            f"_{mode} run at {section['ran_at']}, {section['seconds']:.0f} s; load average before: "
            f"{', '.join(map(str, section['machine']['load_average']))}_",
            "",
        ]
        for table in section["tables"]:
            lines += render_table(Table(**table))
    return "\n".join(lines)


def floors_table(floors: list[Floor]) -> Table:
    verdicts = {True: "met", False: "NOT met", None: "not measured"}
    rows = [[floor.floor, floor.measured, verdicts[floor.met]] for floor in floors]
    return Table("Floors of issue 6", ["floor", "measured", "verdict"], rows)


def render_table(table: Table) -> list[str]:
    """A markdown table with its title and notes (also what is printed)."""
    lines = [f"### {table.title}", "", "| " + " | ".join(table.columns) + " |"]
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in table.rows]
    lines += [""] + [f"- {note}" for note in table.notes] + ([""] if table.notes else [])
    return lines


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_section(section: Section) -> None:
    print(f"\n## {section.name} ({section.seconds:.0f} s)\n")
    for table in [*section.tables, *([floors_table(section.floors)] if section.floors else [])]:
        print("\n".join(render_table(table)))
