"""The HTTP/WebSocket edge: the Starlette app and the strawberry schema. Thin: it calls services."""
