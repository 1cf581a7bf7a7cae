"""The `newsagg` command: up, api, worker, migrate, schema, settings."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from app.settings import Settings, get_settings

DESCRIPTION = """\
newsagg: a news aggregation backend (GraphQL API with subscriptions, crawler, story clustering).

With no DATABASE_URL / REDIS_URL in the environment, `up` and `migrate` start PostgreSQL and Redis embedded from
their pip wheels, with their data under NEWSAGG_HOME (default ./.newsagg)."""


def _parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="newsagg", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = commands.add_parser("up", help="run everything: embedded servers if needed, migrations, API, worker",
                             description="Run the whole system in one process tree; Ctrl-C or SIGTERM stops all "
                             "of it, embedded servers included.")  # fmt: skip
    _add_bind(up, settings)
    up.add_argument("--demo", type=Path, metavar="DIR",
                    help="replay the feed files under DIR from a loopback HTTP server and register them as sources "
                    "(works offline; allows loopback sources for this run)")  # fmt: skip

    api = commands.add_parser("api", help="run the GraphQL API only (needs DATABASE_URL and REDIS_URL)",
                              description="Serve GraphQL at /graphql and /healthz.")  # fmt: skip
    _add_bind(api, settings)

    commands.add_parser("worker", help="run an arq worker only: crawl ticks and source refreshes",
                        description="Run one arq worker (needs DATABASE_URL and REDIS_URL). Run several for more "
                        "throughput; they share work through PostgreSQL row locks and the queue.")  # fmt: skip

    migrate = commands.add_parser("migrate", help="apply database migrations (embedded PostgreSQL if no URL)",
                                  description="Upgrade the database to the latest schema revision.")  # fmt: skip
    migrate.add_argument("--revision", default="head", help="target revision (default head)")

    commands.add_parser("schema", help="print the GraphQL schema (SDL), as committed in schema.graphql")
    commands.add_parser("settings", help="print every setting, its environment variable and default (Markdown)")
    return parser


def _add_bind(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument("--host", default=settings.api_host, help=f"interface to bind (default {settings.api_host})")
    parser.add_argument("--port", type=int, default=settings.api_port, help=f"port (default {settings.api_port})")


def main(argv: list[str] | None = None) -> None:
    settings = get_settings()
    args = _parser(settings).parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.exit(_run(args, settings) or 0)


def _run(args: argparse.Namespace, settings: Settings) -> int | None:
    if args.command == "up":
        from app.runtime.supervisor import UpOptions, run_up

        return run_up(settings, UpOptions(host=args.host, port=args.port, demo=args.demo))
    if args.command == "api":
        import uvicorn

        from app.api.asgi import create_app

        uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level.lower(),
                    lifespan="on", ws="websockets-sansio")  # fmt: skip
        return None
    if args.command == "worker":
        from jobs.worker import create_worker

        create_worker(settings).run()
        return None
    if args.command == "migrate":
        return _migrate(settings, args.revision)
    if args.command == "schema":
        from app.api.schema import build_schema

        print(build_schema(settings).as_str())
        return None
    if args.command == "settings":
        from app.settings import settings_reference

        print(settings_reference())
        return None
    raise AssertionError(args.command)


def _migrate(settings: Settings, revision: str) -> int:
    from app.db.migrate import upgrade_sync

    if settings.database_url:
        upgrade_sync(settings.database_url, revision)
        return 0
    from app.runtime.supervisor import embedded_servers, home_lock

    with home_lock(settings.home), embedded_servers(settings.model_copy(update={"redis_url": "unused"})) as embedded:
        upgrade_sync(embedded.urls["DATABASE_URL"], revision)
    return 0
