"""A GraphQL document priced before it runs: depth, aliases, fragment spreads, nodes and cost, in one linear pass."""
