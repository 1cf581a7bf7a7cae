"""Share links: short unguessable codes that redirect to an article, and the clicks they bring, by referrer and day."""
