"""Stories in every language, at ingest: two outlets' headlines of one event join one story, and another event of the
same day does not, through the real path (articles stored, understood, clustered on PostgreSQL).

The headlines are written for these tests, in the style of each language's press: the same event worded by two
outlets (different verbs, word order, inflections, accents or capitals), and a different event of the same day.
Outside Latin script no pair shares a word that a Latin-only tokenizer would see (a number, a Latin name)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.articles.repository import NewArticle, insert_new
from app.articles.understanding import understand_articles
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories.service import cluster_articles

# language: (one outlet's headline, another outlet's headline of the same event, a different event that day)
HEADLINES = {
    "ru": ("Банк России неожиданно повысил ключевую ставку",
           "Банк России поднял ключевую ставку до 16 процентов годовых",
           "В Москве выпал рекордный снег, пробки достигли 10 баллов"),
    "zh": ("台风“山竹”在广东登陆 数十万人紧急转移",
           "超强台风山竹登陆广东 当地紧急转移数十万群众",
           "上海股市周一收盘上涨 科技股领涨"),
    "ja": ("日銀、マイナス金利を解除 17年ぶりの利上げ",
           "日本銀行がマイナス金利政策の解除を決定",
           "東京で桜が開花 平年より5日早く"),
    "ar": ("زلزال بقوة 6.8 درجات يضرب جنوب المغرب ومقتل المئات",
           "مقتل المئات في زلزال قوي ضرب جنوب المغرب",
           "البنك المركزي المصري يثبت أسعار الفائدة"),
    "el": ("Σεισμός 5,8 Ρίχτερ στην Κρήτη – Αισθητός και στην Αθήνα",
           "ΣΕΙΣΜΟΣ ΣΤΗΝ ΚΡΗΤΗ: 5,8 Ρίχτερ, αισθητός στην Αθήνα",
           "Η Βουλή ψήφισε το νέο νομοσχέδιο για την παιδεία"),
    "de": ("Bundestag beschließt Heizungsgesetz nach monatelangem Streit",
           "Nach langem Streit: Bundestag verabschiedet das Heizungsgesetz",
           "Bayern München verliert überraschend gegen Bochum"),
    "fr": ("Incendie de Notre-Dame : l'enquête privilégie la piste accidentelle",
           "Notre-Dame de Paris : les enquêteurs privilégient la piste d'un accident",
           "Grève SNCF : trafic perturbé mardi sur les lignes TGV"),
    "es": ("Un terremoto de magnitud 7,1 sacude el sur de México",
           "Fuerte sismo de magnitud 7,1 sacude México; reportan daños en el sur",
           "El Real Madrid ficha a un delantero brasileño por 60 millones"),
    "ko": ("한국은행, 기준금리 0.25%포인트 인상…연 3.5%",
           "한은, 기준금리 인상 결정",
           "서울 아파트값 3주 연속 하락"),
    "hi": ("चंद्रयान-3 चांद के दक्षिणी ध्रुव पर सफलतापूर्वक उतरा",
           "इसरो का चंद्रयान-3 चंद्रमा के दक्षिणी ध्रुव पर उतरा, भारत ने रचा इतिहास",
           "दिल्ली में भारी बारिश से यातायात प्रभावित"),
}  # fmt: skip


async def ingested(services: Services, settings: Settings, language: str, titles: tuple[str, ...]) -> list[int]:
    """Each title from an outlet of its own that declares the language, understood, and clustered as at ingest in a
    batch of its own (so each finds the stories before it as PostgreSQL holds them)."""
    now = datetime.now(UTC)
    ids = []
    async with services.db.begin() as session:
        for k, title in enumerate(titles):
            request = SourceRequest(feed_url=f"http://127.0.0.1:9/{language}{k}", name=f"{language} outlet {k}",
                                    language=language)  # fmt: skip
            source = await create_source(session, settings, request)
            new = NewArticle(source.id, f"{language}{k}", f"https://{language}{k}.example/a", title, "", None,
                             now + timedelta(minutes=k), k)  # fmt: skip
            ids += [a.id for a in await insert_new(session, [new])]
    await understand_articles(services.engine, ids, now=now)
    return [(await cluster_articles(services.engine, [i]))[i] for i in ids]


@pytest.mark.parametrize("language", sorted(HEADLINES))
async def test_one_event_in_two_outlets_is_one_story(services: Services, settings: Settings, language: str) -> None:
    first, second, other = HEADLINES[language]
    story, other_story, same_story = await ingested(services, settings, language, (first, other, second))
    assert same_story == story
    assert other_story != story


async def test_languages_side_by_side_keep_their_stories(services: Services, settings: Settings) -> None:
    """Every language's headlines in one window: each event is one story of its own, whatever else is live."""
    stories = [await ingested(services, settings, language, HEADLINES[language]) for language in sorted(HEADLINES)]
    assert all(same == story != other for story, same, other in stories)
    assert len({s for story, same, other in stories for s in (story, other)}) == 2 * len(HEADLINES)
