# Production image: one image, two roles (API and worker; docker-compose.yml runs both and the first-start job),
# installed from requirements.lock, the same pins CI installs (scripts/lock refreshes them).
# Not built on the development machines (no Docker engine there); see docker-compose.yml and docs/operations.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 NEWSAGG_HOME=/var/lib/newsagg
# a fixed uid: the host's secrets/admin_password, mounted as it is, must be readable by it (docs/operations.md)
RUN useradd --uid 10001 --create-home newsagg && install -d -o newsagg -g newsagg /var/lib/newsagg
WORKDIR /srv/newsagg
COPY requirements.lock pyproject.toml README.md alembic.ini schema.graphql ./
COPY app ./app
COPY jobs ./jobs
COPY migrations ./migrations
COPY graphql ./graphql
# editable: migrations are found beside the package (app/db/migrate.py)
RUN pip install -c requirements.lock -e .
USER newsagg
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s CMD ["newsagg", "health", "api"]
CMD ["newsagg", "api", "--host", "0.0.0.0", "--port", "8000"]
