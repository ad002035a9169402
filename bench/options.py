"""What a benchmark run is asked to do: quick or full, which toolsearch sources, which model."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from bench.processes import SERVICE_DIR
from bench.report import RESULTS_DIR


@dataclass(frozen=True)
class Options:
    quick: bool = False
    model_dir: Path | None = None
    """Embedding model directory for toolsearch's hybrid mode (`toolsearch serve --model-dir`)."""
    service_dir: Path = SERVICE_DIR
    """The toolsearch sources to run (a patched copy measures a fix before it lands)."""
    results_dir: Path = RESULTS_DIR

    def pick(self, quick: Any, full: Any) -> Any:
        return quick if self.quick else full

    @cached_property
    def hybrid_unavailable(self) -> str | None:
        """Why toolsearch's hybrid mode cannot be measured in this run, or None when it can."""
        if self.model_dir is None:
            return "not available: no --model-dir given"
        if not (self.model_dir / "model.onnx").exists():
            return f"not available: {self.model_dir} holds no model.onnx"
        env = {**os.environ, "PYTHONPATH": str(self.service_dir)}
        usage = subprocess.run(
            [sys.executable, "-m", "toolsearch", "serve", "--help"], capture_output=True, text=True, env=env
        ).stdout
        if "--model-dir" not in usage:
            return "not available: `toolsearch serve` has no --model-dir yet"
        return None

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        return {key: str(value) if isinstance(value, Path) else value for key, value in values.items()}
