"""What a catalog's tools are flagged for, as pure rules (`flags`): text that addresses the model
(`suspicious_text`), look-alikes and copies (`lookalikes`, over the names' `skeletons`); and the
operator's settings applied to every catalog (`tool_guard`: flags, pins, approvals).
"""

from toolsearch.integrity.flags import Integrity, flagged_last, integrity
from toolsearch.integrity.tool_guard import Approvals, ToolGuard

__all__ = ["Approvals", "Integrity", "ToolGuard", "flagged_last", "integrity"]
