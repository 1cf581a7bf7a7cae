"""WebSub: hubs push new entries of a feed to us, so a pushed source needs polling only as a safety net."""
