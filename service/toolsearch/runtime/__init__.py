"""Concurrency the proxy's parts share: the one owner of its tasks and thread pools (`supervisor`),
and work by key that concurrent callers share once (`single_flight`).
"""

from toolsearch.runtime.single_flight import SingleFlight
from toolsearch.runtime.supervisor import Supervisor, SupervisorClosed

__all__ = ["SingleFlight", "Supervisor", "SupervisorClosed"]
