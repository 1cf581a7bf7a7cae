"""arq worker settings and job functions: thin wrappers over app/ services."""
