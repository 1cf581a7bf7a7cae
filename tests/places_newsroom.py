"""Places test factories: outlets in real countries and stories told in their languages, naming real places."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from app.articles.models import Article
from app.articles.understanding import understand_articles
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories.models import StoryCluster

_serial = itertools.count(1)

# name -> (site, language): the country is inferred from the site (a ccTLD or a well-known outlet)
OUTLETS = {
    "Tagesschau": ("https://www.tagesschau.de/", "de"), "Süddeutsche": ("https://www.sueddeutsche.de/", "de"),
    "Le Parisien": ("https://www.leparisien.fr/", "fr"), "Ouest-France": ("https://www.ouest-france.fr/", "fr"),
    "ABC": ("https://www.abc.es/", "es"), "BBC News": ("https://www.bbc.co.uk/news", "en"),
    "The Guardian": ("https://www.theguardian.com/", "en"), "Reuters": ("https://www.reuters.com/", "en"),
    "AP": ("https://apnews.com/", "en"), "LA Times": ("https://www.latimes.com/", "en"),
}  # fmt: skip

# (title, summary, outlet) per article: each story told by outlets from where it happened and from elsewhere
STORIES = {
    "berlin": [
        ("Stromausfall legt Teile von Berlin lahm",
         "Zehntausende Haushalte in Berlin waren am Montag ohne Strom, teilte der Netzbetreiber mit.", "Tagesschau"),
        ("Berlin: Stromausfall trifft zehntausende Haushalte",
         "Nach einem Brand an einem Umspannwerk in Berlin fiel der Strom aus.", "Süddeutsche"),
        ("Power cut leaves parts of Berlin in the dark",
         "Tens of thousands of households in Berlin lost power after a fire at a substation.", "Reuters"),
    ],
    "paris": [
        ("Grève à Paris : le métro quasiment à l'arrêt",
         "La circulation du métro à Paris est très perturbée ce jeudi, selon la RATP.", "Le Parisien"),
        ("Grève des transports : Paris paralysé",
         "Les usagers de Paris et de Lyon ont dû trouver d'autres moyens de transport.", "Ouest-France"),
    ],
    "valencia": [
        ("Incendio forestal obliga a evacuar pueblos cerca de Valencia",
         "Los bomberos de Valencia luchan contra las llamas desde el martes.", "ABC"),
        ("Wildfire forces evacuations near Valencia",
         "Firefighters near Valencia in Spain battled the blaze for a second day.", "AP"),
    ],
    "leeds": [
        ("Storm floods homes in Leeds and York",
         "Hundreds of homes in Leeds and York were flooded as the river burst its banks.", "BBC News"),
        ("Flooding in Leeds: residents evacuated",
         "Residents of Leeds were moved to emergency shelters overnight.", "The Guardian"),
    ],
    "california": [
        ("Wildfire forces thousands to flee in California",
         "Evacuation orders covered several towns north of Los Angeles, California officials said.", "LA Times"),
        ("California wildfire doubles in size overnight",
         "The fire near Los Angeles has burned 20,000 acres, officials in California said.", "AP"),
        ("Thousands flee California wildfire",
         "Firefighters in California fought the blaze through the night.", "Reuters"),
    ],
}  # fmt: skip


async def add_outlets(services: Services, settings: Settings) -> dict[str, int]:
    found = {}
    async with services.db.begin() as session:
        for n, (name, (site, language)) in enumerate(OUTLETS.items()):
            request = SourceRequest(feed_url=f"http://127.0.0.1:9/outlet{n}", name=name, site_url=site,
                                    language=language)  # fmt: skip
            found[name] = (await create_source(session, settings, request)).id
    return found


async def add_local_story(services: Services, outlets: dict[str, int], key: str, *, age: timedelta) -> int:
    """The story STORIES[key], its articles understood (language, topics, entities and places) as ingest does."""
    now = datetime.now(UTC)
    updated = now - age
    told = STORIES[key]
    async with services.db.begin() as session:
        articles = []
        for position, (title, summary, outlet) in enumerate(told):
            n = next(_serial)
            articles.append(Article(
                source_id=outlets[outlet], external_id=f"p{n}", url=f"https://places.example/{key}/{n}", title=title,
                summary=summary, author=None, published_at=updated - timedelta(minutes=position), crawled_at=updated,
                content_hash=n,
            ))  # fmt: skip
        session.add_all(articles)
        await session.flush()
        sources = sorted({a.source_id for a in articles})
        story = StoryCluster(
            title=told[0][0], representative_article_id=articles[0].id, topics=["world"], topic_counts={"world": 1},
            languages=["en"], source_ids=sources, article_count=len(articles), source_count=len(sources),
            first_seen_at=updated - timedelta(minutes=len(articles)), last_updated_at=updated,
        )  # fmt: skip
        session.add(story)
        await session.flush()
        for article in articles:
            article.cluster_id = story.id
        ids = [a.id for a in articles]
    await understand_articles(services.engine, ids, now=now)
    return story.id
