"""Retention: how long each kind of row is kept, and the hourly pass that deletes the rest in bounded batches."""
