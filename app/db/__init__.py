"""Persistence plumbing: the declarative base, engines, sessions and migrations."""
