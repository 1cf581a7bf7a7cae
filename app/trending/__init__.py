"""Trending stories: article arrivals and reader engagement counted in sliding windows (Redis sorted sets)."""
