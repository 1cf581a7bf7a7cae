"""The raw fetch archive: each fetched feed body kept zstd-compressed for a while, replayable through today's parser."""
