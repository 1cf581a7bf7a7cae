"""Rate limits: token buckets in Redis that every API process shares, who a caller is, and the budgets they get."""
