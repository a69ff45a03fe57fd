"""Runs the official MCP conformance suite's client scenarios against wave-actors (``make conformance``)."""
