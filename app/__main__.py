"""`python -m app` is the `newsagg` command."""

from app.cli import main

if __name__ == "__main__":
    main()
