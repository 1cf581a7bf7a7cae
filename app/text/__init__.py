"""Text in any language the API accepts, as the terms that match one story's headlines across outlets; and what text
PostgreSQL can store, for feeds and API input alike."""
