"""Stories: clusters of articles from many outlets about one event."""
