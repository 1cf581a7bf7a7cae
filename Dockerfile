# Production image: one image, two roles (API and worker); PostgreSQL, Redis and Meilisearch are separate services.
# Not built on the development machines (no Docker engine there); see docker-compose.yml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
RUN useradd --system --create-home newsagg
WORKDIR /srv/newsagg
COPY pyproject.toml README.md alembic.ini schema.graphql ./
COPY app ./app
COPY jobs ./jobs
COPY migrations ./migrations
COPY graphql ./graphql
RUN pip install -e .
USER newsagg
EXPOSE 8000
CMD ["newsagg", "api", "--host", "0.0.0.0", "--port", "8000"]
