"""The keyword baseline: hand-written words per topic, counted in the title (double) and the summary.

It needs no training data at all, and it is half of the shipped classifier (app/topics/classifier.py): it knows
topics the weakly-labelled training data rarely shows (science, technology)."""

from __future__ import annotations

import enum
import itertools

import numpy as np

from app.topics.features import TITLE_WEIGHT, tokens


class Topic(enum.StrEnum):
    WORLD = "world"
    POLITICS = "politics"
    BUSINESS = "business"
    TECHNOLOGY = "technology"
    SCIENCE = "science"
    HEALTH = "health"
    SPORTS = "sports"
    ENTERTAINMENT = "entertainment"


TOPICS = tuple(t.value for t in Topic)

_KEYWORDS = {
    "world": """war troops military army ceasefire refugees refugee embassy foreign minister un united nations nato
        iraq iran syria afghanistan israel palestinian gaza lebanon russia ukraine china beijing korea pyongyang
        india pakistan africa europe eu kremlin taliban insurgents militants rebels bomb bombing killed attack
        border sanctions nuclear summit diplomats diplomatic hostage coup protesters
        insurgency insurgent guerrillas militia militias peacekeepers peacekeeping genocide massacre car_bomb
        suicide_bomber kidnapped hostages abducted qaeda hamas hezbollah isis darfur sudan somalia nigeria kenya congo
        zimbabwe haiti venezuela colombia cuba north_korea tehran baghdad kabul damascus jerusalem west_bank kashmir
        sri_lanka nepal myanmar burma tibet taiwan japan tokyo indonesia philippines thailand vietnam egypt cairo
        libya yemen saudi turkey moscow putin chechnya serbia kosovo bosnia germany berlin palestinians israeli""",
    "politics": """election elections vote voters voting ballot campaign candidate parliament congress senate senator
        house lawmakers legislation bill democrat democrats democratic republican republicans gop labour tory tories
        conservatives party mp mps minister prime president governor policy government opposition poll polls
        referendum cabinet chancellor white_house impeachment
        senators congressman congresswoman congressional legislature legislative lawmaker caucus primaries
        nominee nomination electoral constituency coalition speaker ministers premier presidential candidates
        campaigning polling manifesto veto""",
    "business": """company companies shares stock stocks market markets investors profit profits revenue earnings
        quarter sales bank banks economy economic inflation interest rates oil prices price deal merger acquisition
        takeover ceo chief executive firm billion million dollar euro trade exports jobs unemployment retail
        growth gdp bankruptcy debt tax
        nasdaq dow ftse nikkei wall_street shareholders shareholder dividend dividends ipo bonds treasury fed
        federal_reserve central_bank interest_rate mortgage mortgages retailer retailers airline airlines automaker
        automakers carmaker layoffs job_cuts forecast forecasts analysts quarterly fiscal crude opec barrel currency
        currencies yen imports tariff tariffs consumers consumer spending wages pension pensions insurer insurers
        bankrupt chapter_0 acquire acquires acquired buyout stake subsidiary conglomerate sec""",
    "technology": """technology tech software computer computers internet online web microsoft google apple ibm intel
        oracle yahoo amazon facebook twitter phone phones mobile smartphone iphone broadband wireless digital
        users hackers hacker virus spam security app apps chip chips linux windows gadget robot ai data
        software hardware browser browsers server servers chipmaker semiconductor semiconductors processor
        processors pc pcs laptop laptops tablet ipad ipod itunes website websites search_engine email spyware malware
        phishing cyber cybersecurity hacking hacked encryption password passwords startup startups silicon_valley
        telecom telecoms telecommunications wifi bluetooth download downloads downloading file_sharing piracy
        video_game videogame gaming console xbox playstation nintendo nokia motorola samsung huawei cisco dell hp
        amd nvidia qualcomm salesforce blackberry android ios tiktok instagram whatsapp youtube algorithm programmers
        programming developers open_source cloud_computing supercomputer quantum_computing bandwidth mp3""",
    "science": """science scientists scientist research researchers study space nasa mars moon planet astronomers
        telescope satellite species climate warming environment fossil dinosaur genetic gene genes dna
        biology physics experiment discovery evolution ocean earth spacecraft launch
        astronaut astronauts orbit orbiting rocket rockets spacex space_station comet asteroid galaxy galaxies
        solar_system saturn jupiter venus cassini hubble rover probe lunar physicists chemists biologists
        archaeologists archaeology archaeological paleontologists fossils dinosaurs extinct extinction endangered
        wildlife whales sharks coral reef emissions carbon greenhouse glacier glaciers arctic antarctic antarctica
        biodiversity ecosystem volcano scientific laboratory molecules cells stem_cells cloning neurons""",
    "health": """health medical hospital hospitals doctors doctor patients patient disease cancer drug drugs vaccine
        vaccines virus flu infection infections heart diabetes obesity treatment surgery nurses nhs fda clinical
        trial covid coronavirus pandemic mental
        alzheimer dementia hiv aids malaria tuberculosis ebola measles polio antibiotics antibiotic prescription
        vaccination vaccinated symptoms diagnosis diagnosed therapy tumour tumor tumours tumors stroke smoking
        cholesterol blood_pressure nutrition diet depression pregnancy pregnant outbreak epidemic""",
    "sports": """game games match matches team teams season coach player players league cup championship champion
        win won victory defeat beat goal goals score scored football soccer rugby cricket tennis golf baseball
        basketball nfl nba olympic olympics tournament final sport sports striker midfielder
        nhl mlb nascar formula_one grand_prix wimbledon grand_slam pga innings wickets wicket batsman bowler
        quarterback touchdown touchdowns pitcher homer home_run inning playoffs playoff postseason world_series
        super_bowl stanley_cup premier_league champions_league world_cup medal medals athletes athlete marathon
        sprinter cyclist cycling tour_de_france boxer heavyweight seeded semifinal semifinals quarterfinal
        quarterfinals hat_trick coaches rookie mvp yankees""",
    "entertainment": """film films movie movies actor actress star stars music album band singer song songs concert
        tv television show series hollywood oscar oscars award awards festival box office celebrity theatre
        comedy drama director book novel chart
        grammy grammys emmy emmys golden_globe bafta blockbuster sequel premiere screenplay soundtrack
        rapper pop_star rock_band broadway ballet musical sitcom reality_show netflix hbo disney pixar studio studios
        actors actresses celebrities gig gigs charts comedian novelist bestseller documentary""",
}
KEYWORDS = {t: frozenset(w.replace("_", " ") for w in words.split()) for t, words in _KEYWORDS.items()}
_TOPICS_OF: dict[str, list[int]] = {}  # keyword -> the topics (by index) it counts for
for _index, _topic in enumerate(TOPICS):
    for _word in KEYWORDS[_topic]:
        _TOPICS_OF.setdefault(_word, []).append(_index)


def keyword_probabilities(docs: list[tuple[str, str]]) -> np.ndarray:
    """One row per (title, summary): keyword hits per topic as a distribution (uniform when none matched)."""
    scores = np.zeros((len(docs), len(TOPICS)))
    for i, (title, summary) in enumerate(docs):
        for text, weight in ((title, TITLE_WEIGHT), (summary, 1.0)):
            words = tokens(text or "", stop=False)
            for gram in words + [f"{a} {b}" for a, b in itertools.pairwise(words)]:
                for j in _TOPICS_OF.get(gram, ()):
                    scores[i, j] += weight
    scores += 1e-3
    return np.asarray(scores / scores.sum(1, keepdims=True))
