"""Feed sources: what we crawl, when, and how each fetch went."""
