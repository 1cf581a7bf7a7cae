"""Ingest: fetch a source's feed, parse it to a normalized model, store new articles once."""
