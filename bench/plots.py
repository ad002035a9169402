"""Plots of the results (matplotlib, PNG): latency versus catalog size, throughput versus concurrency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, NullLocator

from bench.report import results_path


def plot(document: dict[str, Any], results_dir: Path) -> list[Path]:
    """Write the plots whose sections are in `document`; return their paths."""
    sections = document["sections"]
    written = []
    machine = document["machine"]
    caption = f"{machine['nproc']} cores, {machine['cpu']}, Python {machine['python']}"
    if "latency_by_size" in sections.get("quality", {}).get("data", {}):
        written.append(_latency_by_size(sections["quality"]["data"]["latency_by_size"], results_dir, caption))
    if "results" in sections.get("throughput", {}).get("data", {}):
        written.append(_throughput(sections["throughput"]["data"]["results"], results_dir, caption))
    return written


def _plain_ticks(axes: Axes, xs: list[int]) -> None:
    """Log axes ticked at the measured points, labelled 1,500 rather than 1.5 x 10^3."""
    axes.set_xticks(sorted(set(xs)))
    axes.xaxis.set_minor_locator(NullLocator())
    plain = FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}")
    axes.xaxis.set_major_formatter(plain)
    axes.yaxis.set_major_formatter(plain)


def _path(results_dir: Path, name: str) -> Path:
    json_path = results_path(results_dir, "json")
    return json_path.with_name(f"{json_path.stem}-{name}.png")


def _latency_by_size(
    by_size: dict[str, dict[str, dict[str, float]]], results_dir: Path, caption: str
) -> Path:
    figure, axes = plt.subplots(figsize=(9, 4.5))
    for name, sizes in by_size.items():
        points = sorted((int(size), figures) for size, figures in sizes.items() if figures.get("n"))
        xs = [size for size, _ in points]
        line = axes.plot(xs, [f["p50"] for _, f in points], marker="o", label=f"{name} p50")[0]
        axes.plot(
            xs,
            [f["p99"] for _, f in points],
            marker=".",
            linestyle="--",
            color=line.get_color(),
            label=f"{name} p99",
        )
    axes.set(xscale="log", yscale="log", xlabel="tools in the catalog", ylabel="search latency, ms (log)")
    _plain_ticks(axes, [int(size) for sizes in by_size.values() for size in sizes])
    axes.set_title("Warm search latency through HTTP versus catalog size", fontsize=11)
    axes.grid(True, which="both", alpha=0.3)
    # Beside the axes: with several hybrid profiles the legend would cover the lines.
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _save(figure, caption, results_dir, "latency-vs-catalog-size")


def _throughput(results: dict[str, dict[str, list[dict[str, Any]]]], results_dir: Path, caption: str) -> Path:
    figure, all_axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
    for axes, (kind, by_target) in zip(all_axes[0], results.items(), strict=True):
        for name, points in by_target.items():
            axes.plot([p["connections"] for p in points], [p["rps"] for p in points], marker="o", label=name)
        axes.set(
            xscale="log",
            yscale="log",
            xlabel="concurrent connections (wrk)",
            ylabel="answered requests/s (log)",
        )
        _plain_ticks(axes, [p["connections"] for points in by_target.values() for p in points])
        axes.set_title(f"{kind}: throughput versus concurrency", fontsize=11)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    return _save(figure, caption, results_dir, "throughput-vs-concurrency")


def _save(figure: Any, caption: str, results_dir: Path, name: str) -> Path:
    """Caption `figure`, write it as a PNG named for the run and `name`, and free it."""
    figure.text(0.01, 0.01, caption, fontsize=7, alpha=0.7)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    path = _path(results_dir, name)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
