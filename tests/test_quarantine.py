"""What a caller's catalog withholds (`quarantine`): a tool changed since the catalog first listed
it, until an operator approves it (`--on-tool-change quarantine`), and with `--hide-suspicious` a
tool flagged as hostile. Pins live in a real in-process store."""

from __future__ import annotations

from pathlib import Path

from toolsearch.backends.memory import MemoryCatalogStore
from toolsearch.catalog.quarantine import Quarantine, Withholding
from toolsearch.integrity.flags import COPIES_TOOL
from toolsearch.integrity.tool_guard import Approvals, ToolGuard
from toolsearch.telemetry import Telemetry
from toolsearch.tool import ToolInterner

INTERNER = ToolInterner()
FIRST = INTERNER.intern(
    {"name": "notes_add", "description": "Add a note.", "inputSchema": {"type": "object"}}
)
CHANGED = INTERNER.intern(
    {"name": "notes_add", "description": "Add a note now.", "inputSchema": {"type": "object"}}
)


def _guard(*, hide_suspicious: bool = False, approved: Path | None = None) -> ToolGuard:
    return ToolGuard(
        MemoryCatalogStore(),
        Telemetry(use_environment=False),
        hide_suspicious=hide_suspicious,
        on_change="quarantine",
        approvals=Approvals(approved),
    )


async def test_a_tool_changed_since_its_first_listing_is_quarantined() -> None:
    quarantine = Quarantine(_guard())
    first = await quarantine.withholding("caller", [FIRST], lambda: None)
    changed = await quarantine.withholding("caller", [CHANGED], lambda: None)
    assert first is not None and first.quarantined == {}
    assert changed is not None and changed.quarantined == {"notes_add": CHANGED.digest}
    reason = changed.reason("notes_add", CHANGED.digest, ())
    assert reason is not None and "quarantined until an operator approves" in reason


async def test_an_approved_change_is_served(tmp_path: Path) -> None:
    approved = tmp_path / "approved"
    approved.write_text(f"notes_add {CHANGED.digest}\n")
    withholding = Withholding(_guard(approved=approved), {"notes_add": CHANGED.digest})
    assert withholding.reason("notes_add", CHANGED.digest, ()) is None


async def test_without_a_guard_nothing_is_withheld() -> None:
    assert await Quarantine(None).withholding("caller", [FIRST], lambda: None) is None


def test_a_flagged_tool_is_withheld_only_when_the_operator_hides_suspicious_tools() -> None:
    shown = Withholding(_guard())
    hidden = Withholding(_guard(hide_suspicious=True))
    assert shown.reason("notes_add", FIRST.digest, (COPIES_TOOL,)) is None
    reason = hidden.reason("notes_add", FIRST.digest, (COPIES_TOOL,))
    assert reason == "notes_add is withheld: its definition looks hostile (copies-tool)."


def test_the_names_that_may_be_withheld_are_the_quarantined_then_the_hidden_flagged_each_once() -> None:
    quarantined = {"b": "digest-b", "a": "digest-a"}
    assert Withholding(_guard(), quarantined).candidates(["a", "c"]) == ["b", "a"]
    assert Withholding(_guard(hide_suspicious=True), quarantined).candidates(["a", "c"]) == ["b", "a", "c"]
