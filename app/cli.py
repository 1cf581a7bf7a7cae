"""The `newsagg` command, parsed and dispatched: up, api, worker, migrate, opml, users, documents, reindex, prune,
replay, fetch, articles, entities, eval, topics, health, schema, settings (the longer commands in app/commands/)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from app.commands import accounts, archive, articles, database, documents, evaluation, retention, sources
from app.settings import Settings, get_settings

DESCRIPTION = """\
newsagg: a news aggregation backend (GraphQL API with subscriptions, crawler, story clustering).

With no DATABASE_URL / REDIS_URL in the environment, `up` and `migrate` start PostgreSQL and Redis embedded from
their pip wheels, with their data under NEWSAGG_HOME (default ./.newsagg)."""


def _parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="newsagg", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    level = settings.log_level.upper()
    parser.add_argument("--log-level", default=level, type=str.upper, choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help=f"default {level}")  # fmt: skip
    parser.add_argument("--log-format", choices=["text", "json"], default=settings.log_format,
                        help="text, or one JSON object a line (default: text on a terminal, else json)")  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = commands.add_parser("up", help="run everything: embedded servers if needed, migrations, API, worker",
                             description="Run the whole system in one process tree; Ctrl-C or SIGTERM stops all "
                             "of it, embedded servers included.")  # fmt: skip
    _add_bind(up, settings)
    up.add_argument("--demo", type=Path, metavar="DIR",
                    help="replay the feed files under DIR (or a tar archive of them) from a loopback HTTP server and "
                    "register them as sources "
                    "(works offline; allows loopback sources for this run)")  # fmt: skip
    up.add_argument("--api", type=int, default=settings.api_processes, metavar="N", dest="apis",
                    help="API processes; more than one run behind HAProxy on --host/--port when it is installed "
                    f"(default {settings.api_processes}, NEWSAGG_API_PROCESSES)")  # fmt: skip
    up.add_argument("--workers", type=int, default=settings.worker_processes, metavar="M",
                    help=f"arq workers (default {settings.worker_processes}, NEWSAGG_WORKER_PROCESSES)")  # fmt: skip
    up.add_argument("--article-workers", type=int, default=settings.article_worker_processes, metavar="K",
                    help="processes that fetch article pages for their text, apart from the crawl; 0: no page is "
                    f"fetched (default {settings.article_worker_processes}, "
                    "NEWSAGG_ARTICLE_WORKER_PROCESSES)")  # fmt: skip
    up.add_argument("--speed", type=float, default=settings.demo_speed, metavar="X",
                    help="with --demo: replay X times faster than the news happened "
                    f"(default {settings.demo_speed:g}, NEWSAGG_DEMO_SPEED)")  # fmt: skip

    api = commands.add_parser("api", help="run the GraphQL API only (needs DATABASE_URL and REDIS_URL)",
                              description="Serve GraphQL at /graphql and /healthz.")  # fmt: skip
    _add_bind(api, settings)

    worker = commands.add_parser("worker", help="run an arq worker only: crawling, WebSub, understanding and "
                                 "clustering, outbox relay, pruning (and article pages unless "
                                 "NEWSAGG_WORKER_FETCHES_ARTICLES=false); or, with --articles, article pages only",
                                 description="Run one arq worker (needs DATABASE_URL and REDIS_URL). Run several for "
                                 "more throughput; they share work through PostgreSQL row locks and the "
                                 "queue.")  # fmt: skip
    worker.add_argument("--articles", action="store_true",
                        help="fetch article pages for their text only (the article queue), extraction at a lower CPU "
                        "priority; set NEWSAGG_WORKER_FETCHES_ARTICLES=false for the crawl workers then")  # fmt: skip

    migrate = commands.add_parser("migrate", help="apply database migrations (embedded PostgreSQL if no URL)",
                                  description="Upgrade the database to the latest schema revision.")  # fmt: skip
    migrate.add_argument("--revision", default="head", help="target revision (default head)")
    migrate.add_argument("--first-start", action="store_true",
                         help="migrate to head, then do what `newsagg up` does on start: the default sources "
                         "on a database without any, the administrator NEWSAGG_ADMIN_EMAIL "
                         "if no account has it")  # fmt: skip

    opml = commands.add_parser("opml", help="import or export sources as OPML (embedded PostgreSQL if no URL)")
    opml_commands = opml.add_subparsers(dest="opml_command", required=True, metavar="ACTION")
    opml_import = opml_commands.add_parser("import", help="add every feed of an OPML file as a source")
    opml_import.add_argument("file", type=Path, help="OPML file; folders become source categories")
    opml_export = opml_commands.add_parser("export", help="write all sources as OPML 2.0")
    opml_export.add_argument("file", type=Path, nargs="?", help="output file (default: standard output)")

    source_commands = commands.add_parser("sources", help="sources (embedded PostgreSQL if no URL)").add_subparsers(
        dest="sources_command", required=True, metavar="ACTION")  # fmt: skip
    merge = source_commands.add_parser(
        "merge", help="merge source OTHER into SURVIVOR (one feed under two ids): its articles, fetch log, archive, "
        "follows and mutes move; OTHER is deleted")  # fmt: skip
    merge.add_argument("survivor", type=int, metavar="SURVIVOR", help="the source kept, with its settings")
    merge.add_argument("other", type=int, metavar="OTHER", help="the source merged into it and deleted")

    users = commands.add_parser("users", help="accounts (embedded PostgreSQL if no URL)")
    user_commands = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    create_admin = user_commands.add_parser(
        "create-admin", help="create an administrator account (the password is asked for, or read from stdin)"
    )
    create_admin.add_argument("email")
    grant = user_commands.add_parser("grant-admin", help="let an account manage sources")
    grant.add_argument("email")
    revoke = user_commands.add_parser("revoke-admin", help="take source management away from an account")
    revoke.add_argument("email")

    documents = commands.add_parser(
        "documents",
        help="trusted documents: what may run when NEWSAGG_TRUSTED_DOCUMENTS_ONLY is set (embedded "
        "PostgreSQL if no URL)",
    )
    document_commands = documents.add_subparsers(dest="documents_command", required=True, metavar="ACTION")
    register = document_commands.add_parser("register", help="trust GraphQL documents (graphql/ needs no registering)")
    register.add_argument("files", type=Path, nargs="+", metavar="FILE",
                          help="a .graphql document, or an Apollo persisted query manifest (.json)")  # fmt: skip
    document_commands.add_parser("list", help="the registered documents: SHA-256, name, date")

    reindex = commands.add_parser(
        "reindex", help="send every article to the Meilisearch index again (safe while ingest runs; needs MEILI_URL)"
    )
    reindex.add_argument("--since", type=_date, metavar="DATE",
                         help="only articles crawled since DATE (ISO 8601: 2026-11-20, 2026-11-20T08:00Z)")  # fmt: skip
    prune = commands.add_parser(
        "prune", help="delete now what is past its retention, as the worker does hourly (embedded PostgreSQL if no URL)"
    )
    prune.add_argument("--dry-run", action="store_true", help="only count, by kind, what would be deleted")
    replay = commands.add_parser("replay", help="parse a source's archived fetch bodies again with today's parser and "
                                 "store what changed (a second replay stores nothing)")  # fmt: skip
    replay.add_argument("--source", type=int, required=True, metavar="ID", help="the source's id")
    replay.add_argument("--since", type=_date, required=True, metavar="DATE",
                        help="fetches made since DATE (ISO 8601: 2026-11-20, 2026-11-20T08:00Z)")  # fmt: skip
    fetch_commands = commands.add_parser("fetch", help="the fetch log and archive").add_subparsers(
        dest="fetch_command", required=True, metavar="ACTION")  # fmt: skip
    fetch_show = fetch_commands.add_parser("show", help="what one fetch received and the articles it produced")
    fetch_show.add_argument("id", type=int, help="the fetch's id (the fetch log's)")
    fetch_show.add_argument("--body", action="store_true", help="print the archived body as received instead (its "
                            "first MB, with a note on stderr when there is more; control characters escaped on a "
                            "terminal)")  # fmt: skip
    fetch_show.add_argument("--full", action="store_true", help="with --body: all of it, however large")
    fetch_show.add_argument("--max-bytes", type=int, default=1024 * 1024, metavar="N",
                            help="with --body: print at most N bytes (default 1 MB)")  # fmt: skip
    article_commands = commands.add_parser("articles", help="stored articles").add_subparsers(
        dest="articles_command", required=True, metavar="ACTION")  # fmt: skip
    fetch_text = article_commands.add_parser(
        "fetch-text", help="queue page fetches for articles without text (stored before pages were fetched, or while "
        "no article worker ran); idempotent, newest first, a JSON summary as the last line")  # fmt: skip
    fetch_text.add_argument("--source", type=_count, metavar="ID", help="only this source's articles")
    fetch_text.add_argument("--since", type=_date, metavar="DATE",
                            help="only articles crawled since DATE (ISO 8601: 2026-11-20, "
                            "2026-11-20T08:00Z)")  # fmt: skip
    fetch_text.add_argument("--limit", type=_count, metavar="N", help="at most N articles, the newest")
    entity_commands = commands.add_parser("entities", help="named entities of stored articles").add_subparsers(
        dest="entities_command", required=True, metavar="WHAT")  # fmt: skip
    entity_commands.add_parser("backfill", help="extract the entities of articles stored before entities were")
    evaluation = commands.add_parser("eval", help="measure the understanding of the news on labelled data")
    evaluations = evaluation.add_subparsers(dest="eval_command", required=True, metavar="WHAT")
    clustering = evaluations.add_parser("clustering", help="story clustering: B-cubed precision/recall/F1 (JSON)")
    clustering.add_argument(
        "--csv",
        type=Path,
        nargs="+",
        required=True,
        help="labelled CSV (TITLE, STORY, PUBLISHER, TIMESTAMP); several: a report of each",
    )
    clustering.add_argument(
        "--report",
        action="store_true",
        help="JSON lines per file: both orders, cross-validated by story (--folds, default 5), per "
        "language, and how separable the labels are by text",
    )
    clustering.add_argument(
        "--tune",
        action="append",
        metavar="FIELD=V1,V2",
        help="choose a policy field by cross-validation by story over every file (repeatable)",
    )
    clustering.add_argument("--order", choices=["time", "shuffled"], default="time")
    clustering.add_argument("--seed", type=int, default=0, help="shuffle seed")
    clustering.add_argument("--folds", type=int, help="cross-validate: cluster each of K groups of stories alone")
    clustering.add_argument(
        "--threshold",
        type=float,
        help="override the similarity threshold (of words; --tune gram_threshold=V for n-grams)",
    )
    clustering.add_argument("--min-shared", type=int, help="override the shared significant terms required")
    clustering.add_argument(
        "--errors",
        type=int,
        default=0,
        metavar="N",
        help="also list the N costliest split and merged stories (not with --folds)",
    )
    topics = evaluations.add_parser("topics", help="topic classification: accuracy and macro-F1 (JSON)")
    topics.add_argument("--csv", type=Path, required=True, help="AG News (label, title, description) or BBC CSV")
    topics.add_argument("--folds", type=int, default=0, help="also train in-domain by K-fold cross-validation")
    topics.add_argument("--seed", type=int, default=0)
    entities = evaluations.add_parser("entities", help="named entities: precision/recall/F1 per kind (JSON)")
    entities.add_argument("--jsonl", type=Path, required=True,
                          help="labelled lines: {title, summary, entities: [[name, PER|ORG|LOC], ...]}")  # fmt: skip
    languages = evaluations.add_parser("languages", help="language detection on headline-length snippets (JSON)")
    languages.add_argument("--tsv", type=Path, help="language<TAB>sentence lines (default: the eld test set)")
    languages.add_argument("--english", type=Path, nargs="*", default=[],
                           help="CSVs of English headlines (TITLE or title column)")  # fmt: skip

    extraction = evaluations.add_parser("extraction", help="article text extraction: shingle F1 per the article "
                                        "extraction benchmark (JSON)")  # fmt: skip
    extraction.add_argument("--dir", type=Path, required=True, help="folder of html/<id>.html.gz and ground-truth.json")
    extraction.add_argument("--compare", action="store_true", help="also run readability-lxml (the eval extra)")

    topic_commands = commands.add_parser("topics", help="the topic model").add_subparsers(
        dest="topics_command", required=True, metavar="WHAT")  # fmt: skip
    train = topic_commands.add_parser("train", help="train the topic model from feed items labelled by URL section")
    train.add_argument("--items", type=Path, required=True, help="JSON lines (title, summary, link), maybe .gz")
    train.add_argument("--out", type=Path, required=True, help="where to write the model (.npz)")
    train.add_argument("--keep", type=int, default=10_000, help="hashed words kept (default 10000)")
    topic_commands.add_parser("relabel", help="label stored articles again with the shipped classifier (after an "
                              "upgrade) and count their stories' topics again")  # fmt: skip

    health = commands.add_parser("health", help="a container healthcheck: exit 0 when this host's API answers "
                                 "/healthz (NEWSAGG_API_PORT), or a worker's heartbeat is fresh")  # fmt: skip
    health.add_argument("what", choices=["api", "worker"])
    commands.add_parser("schema", help="print the GraphQL schema (SDL), as committed in schema.graphql")
    commands.add_parser("settings", help="print every setting, its environment variable and default (Markdown)")
    return parser


def _add_bind(parser: argparse.ArgumentParser, settings: Settings) -> None:
    parser.add_argument("--host", default=settings.api_host, help=f"interface to bind (default {settings.api_host})")
    parser.add_argument("--port", type=int, default=settings.api_port, help=f"port (default {settings.api_port})")


SERVING = ("up", "api", "worker")  # the processes whose metrics one API's /metrics reports


def main(argv: list[str] | None = None) -> None:
    settings = get_settings()
    args = _parser(settings).parse_args(argv)
    from app.observability import logs

    args.log_format = logs.resolve_format(args.log_format)
    logs.configure(args.log_level, args.log_format)
    if args.command in SERVING:
        from app.observability.multiprocess import share_folder

        share_folder(settings.metrics_folder)  # before anything imports prometheus_client
    from app.runtime.embedded import DataFromAnotherMajor
    from app.runtime.first_start import FirstStartFailed  # after share_folder: it imports metrics
    from app.runtime.servers_file import RunningElsewhere
    from app.runtime.supervisor import HomeInUse

    try:
        sys.exit(_run(args, settings) or 0)
    except (FirstStartFailed, DataFromAnotherMajor, RunningElsewhere, HomeInUse) as error:
        print(f"newsagg {args.command}: {error}", file=sys.stderr)
        sys.exit(1)


def _run(args: argparse.Namespace, settings: Settings) -> int | None:
    if args.command == "up":
        from app.runtime.supervisor import UpOptions, run_up

        logged = {"NEWSAGG_LOG_LEVEL": args.log_level, "NEWSAGG_LOG_FORMAT": args.log_format}  # to its processes
        if args.apis < 1 or args.workers < 1 or args.article_workers < 0:
            print("--api and --workers take a number of processes, 1 or more; --article-workers 0 or more",
                  file=sys.stderr)  # fmt: skip
            return 2
        return run_up(settings, UpOptions(host=args.host, port=args.port, demo=args.demo, speed=args.speed,
                                        apis=args.apis, workers=args.workers, article_workers=args.article_workers,
                                        environment=logged))  # fmt: skip
    if args.command == "api":
        import uvicorn

        from app.api.asgi import create_app

        accounts.first_admin_hint(settings)
        # log_config=None: uvicorn's loggers (server and access) keep no handler of their own, so its lines go through
        # the root's, in newsagg's format and with the request id. proxy_headers off: X-Forwarded-For is believed only
        # from NEWSAGG_RATE_LIMIT_TRUSTED_PROXIES (uvicorn's own reading would take it from any loopback peer, and a
        # client could choose its rate-limit bucket)
        uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level.lower(),
                    log_config=None, lifespan="on", ws="websockets-sansio", proxy_headers=False,
                    ws_max_size=settings.ws_max_message_bytes)  # fmt: skip
        return None
    if args.command == "worker":
        from app.observability.multiprocess import serve
        from jobs.worker import create_article_worker, create_worker

        if settings.worker_metrics_address:
            serve(settings.worker_metrics_address)
        if args.articles:
            create_article_worker(settings, process=True).run()
        else:
            create_worker(settings).run()
        return None
    if args.command == "migrate":
        return database.migrate(settings, args.revision, first_start=args.first_start)
    if args.command == "opml":
        return sources.opml(settings, args)
    if args.command == "sources":
        return sources.merge(settings, args.survivor, args.other)
    if args.command == "users":
        return accounts.users(settings, args)
    if args.command == "documents":
        return documents.documents(settings, args)
    if args.command == "reindex":
        return articles.reindex(settings, args.since)
    if args.command == "prune":
        return retention.prune(settings, args.dry_run)
    if args.command == "replay":
        return archive.replay(settings, args.source, args.since)
    if args.command == "fetch":
        limit = None if args.full else max(args.max_bytes, 0)
        return archive.show(settings, args.id, args.body, limit=limit)
    if args.command == "articles":
        from jobs.articles import page_queue

        return articles.fetch_text(settings, args.source, args.since, args.limit, page_queue)
    if args.command == "entities":
        return articles.backfill_entities(settings)
    if args.command == "eval":
        return evaluation.evaluate(args)
    if args.command == "topics":
        return articles.relabel_topics(settings) if args.topics_command == "relabel" else evaluation.train_topics(args)
    if args.command == "health":
        from app.commands.health import health

        return health(settings, args.what)
    if args.command == "schema":
        from app.api.schema import build_schema

        print(build_schema(settings).as_str())
        return None
    if args.command == "settings":
        from app.settings import settings_reference

        print(settings_reference())
        return None
    raise AssertionError(args.command)


def _date(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _count(value: str) -> int:
    """A number from 1 to PostgreSQL's largest bigint (an id, a limit)."""
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) < 2**63:
        raise argparse.ArgumentTypeError(f"not a number from 1 to 2^63-1: {value!r}")
    return int(value)
