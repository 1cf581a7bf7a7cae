"""Articles: one row per URL, as parsed from a source's feed."""
