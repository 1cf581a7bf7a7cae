"""Readers: accounts, API keys, follows, mutes, engagement and interests."""
