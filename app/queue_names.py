"""Names of the queued jobs, shared by the processes that enqueue them and the worker that runs them."""

REFRESH_SOURCE = "refresh_source_job"
CRAWL_TICK = "crawl_tick"
WEBSUB_SUBSCRIBE = "websub_subscribe_job"
INGEST_PUSH = "ingest_push_job"
UNDERSTAND_ARTICLES = "understand_articles_job"
FETCH_ARTICLE_TEXT = "fetch_article_text_job"  # on the article queue (settings.article_queue_name)
