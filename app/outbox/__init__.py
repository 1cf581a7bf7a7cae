"""The transactional outbox: events written with the data, delivered to Redis/search after commit."""
