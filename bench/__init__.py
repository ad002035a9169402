"""Benchmarks of toolsearch side by side with a peer (FastMCP's BM25 tool-search transform).

`python -m bench` runs every section and writes bench/results/<date>.{json,md} and plots; see
bench/__main__.py for the flags, and each section's module for what it measures.
"""
