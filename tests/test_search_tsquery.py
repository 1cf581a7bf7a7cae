"""The tsquery reader and its loosened form (app/search/tsquery.py): what PostgreSQL writes is read back the same,
and the loosened query matches every text the exact one matches (checked by PostgreSQL itself on random queries)."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import text

from app.search.tsquery import loosened, parse, written
from app.services import Services

VOCABULARY = ["flood", "rates", "bank", "storm", "valencia", "insurance", "climb", "rise"]


@pytest.mark.parametrize(
    ("source", "loose"),
    [
        ("'na' <-> 'ang'", "('na' & 'ang')"),
        ("'x' & !( 'a' <-> 'b' ) & !'c'", "'x'"),
        ("'reveals' & !'home' | 'reveal' & !'home'", "('reveals' | 'reveal')"),
        ("'tv' & 'patrol'", "'tv' & 'patrol'"),  # nothing to loosen: as it was
        ("'o''brien' <2> 'y' & ( 'p' | 'q' )", "(('o''brien' & 'y') & ('p' | 'q'))"),
        ("'a' | !'b'", None),  # nothing would be left to require
        ("!'a'", None),
        ("'a' & ", None),  # not tsquery text
        ("'a' 'b'", None),
    ],
)
def test_loosened(source: str, loose: str | None) -> None:
    assert loosened(source) == loose


def test_precedence_is_postgresql_s() -> None:
    assert written(parse("'a' | 'b' & 'c' <-> !'d'")) == "('a' | ('b' & ('c' <-> !('d'))))"


def _random_query(rng: random.Random) -> str:
    parts = []
    for n in range(rng.randint(1, 4)):
        words = " ".join(rng.sample(VOCABULARY, rng.randint(1, 2)))
        term = f'"{words}"' if " " in words else words
        if n and rng.random() < 0.3:
            parts.append("or")
        parts.append(("-" if n and rng.random() < 0.3 else "") + term)
    return " ".join(parts)


async def test_the_loosened_query_matches_whatever_the_exact_one_matches(services: Services) -> None:
    rng = random.Random(5)
    texts = [" ".join(rng.choices(VOCABULARY, k=rng.randint(2, 7))) for _ in range(150)]
    checked = 0
    async with services.engine.connect() as connection:
        for _ in range(120):
            query = _random_query(rng)
            for config in ("simple", "english"):
                exact = await connection.scalar(text("SELECT CAST(websearch_to_tsquery(CAST(:c AS regconfig), :q)"
                                                      " AS text)"), {"c": config, "q": query})  # fmt: skip
                loose = loosened(exact) if exact else None
                if loose is None:
                    continue
                missed = await connection.scalar(
                    text("SELECT count(*) FROM unnest(CAST(:texts AS text[])) t "
                         "WHERE to_tsvector(CAST(:c AS regconfig), t) @@ CAST(:exact AS tsquery) "
                         "AND NOT to_tsvector(CAST(:c AS regconfig), t) @@ CAST(:loose AS tsquery)"),
                    {"texts": texts, "c": config, "exact": exact, "loose": loose},
                )  # fmt: skip
                assert missed == 0, (query, exact, loose)
                checked += 1
    assert checked > 150  # most random queries can be loosened (not those with an exclusion beside `or`)
