"""GraphQL object types, mirroring the domain."""
