"""Text in any language the API accepts, as the terms that match one story's headlines across outlets."""
