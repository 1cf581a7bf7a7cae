"""Running newsagg: embedded servers, the `up` supervisor, demo replay."""
