"""Real-time fan-out: events published on Redis pub/sub reach every API process and its subscribers."""
