"""Surviving a dependency's outage: back-off, restarts and what they count."""
