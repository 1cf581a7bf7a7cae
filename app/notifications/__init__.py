"""Alerts for readers who are not connected: rules, fan-out of outbox events to deliveries, channels, retries."""
