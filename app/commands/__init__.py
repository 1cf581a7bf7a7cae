"""The `newsagg` subcommands that are more than a line of dispatch, one module per concept."""
