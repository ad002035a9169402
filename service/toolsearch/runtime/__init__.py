"""Concurrency the proxy's parts share: work by key that concurrent callers share once
(`single_flight`).
"""

from toolsearch.runtime.single_flight import SingleFlight

__all__ = ["SingleFlight"]
