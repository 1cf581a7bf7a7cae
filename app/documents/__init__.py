"""GraphQL documents known by their SHA-256: persisted queries (Redis) and trusted documents (PostgreSQL)."""
