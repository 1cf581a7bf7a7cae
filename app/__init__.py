"""newsagg: a news aggregation backend with a GraphQL API and real-time subscriptions."""

__version__ = "0.1.0"
