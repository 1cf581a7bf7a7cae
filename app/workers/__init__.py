"""Worker processes: which are alive (heartbeats in PostgreSQL), and the sweep of work whose worker is gone."""
