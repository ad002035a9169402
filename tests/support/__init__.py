"""Helpers shared by the tests: real servers on loopback and clients for them."""
