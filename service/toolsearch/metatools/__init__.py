"""The five meta-tools a model sees instead of the whole catalog (`service`: fetching, calling
upstream, recording), and their rules as pure functions: the definitions (`definitions`), what a
call's arguments mean and may reach (`call_rules`, `validation`, `policy`), and search_tools'
answer within its budget (`answer`, over `descriptions` and `compact_schemas`).
"""

from toolsearch.metatools.policy import ToolPolicy
from toolsearch.metatools.service import MetaTools

__all__ = ["MetaTools", "ToolPolicy"]
