"""What kind of entity a phrase names, by the words it is made of and the title words people carry."""

from __future__ import annotations

from app.entities.gazetteer import place_form

# Title words before a name: the person holds the role ("President", "Mayor"); honorifics say only that it is a person
ROLES = {
    "president": "president", "vice president": "vice president", "prime minister": "prime minister",
    "premier": "premier", "chancellor": "chancellor", "governor": "governor", "gov.": "governor",
    "gov": "governor", "mayor": "mayor", "senator": "senator", "sen.": "senator", "rep.": "representative",
    "minister": "minister", "secretary": "secretary", "press secretary": "press secretary",
    "ceo": "chief executive", "chief executive": "chief executive", "chairman": "chairman",
    "coach": "coach", "manager": "manager", "leader": "leader", "king": "king", "queen": "queen",
    "pope": "pope", "chief constable": "chief constable", "judge": "judge", "justice": "justice",
    "speaker": "speaker", "health secretary": "health secretary", "foreign minister": "foreign minister",
    "opposition leader": "opposition leader", "treasurer": "treasurer", "attorney general": "attorney general",
    "general": "general", "gen.": "general", "governor-general": "governor-general",
    "secretary of state": "secretary of state", "lieutenant governor": "lieutenant governor",
    "lt. gov.": "lieutenant governor", "atty. gen.": "attorney general",
    "bundeskanzler": "chancellor", "kanzler": "chancellor", "bundeskanzlerin": "chancellor",
    "präsident": "president", "präsidentin": "president", "président": "president", "présidente": "president",
    "presidente": "president", "premier ministre": "prime minister", "ministre": "minister",
    "ministerpräsident": "premier", "bürgermeister": "mayor", "maire": "mayor", "alcalde": "mayor",
    "президент": "president", "премьер-министр": "prime minister", "министр": "minister", "мэр": "mayor",
}  # fmt: skip
HONORIFICS = frozenset({
    "mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "sir", "dame", "lord", "lady", "prince", "princess",
    "professor", "prof.", "former", "late", "st", "saint", "rev.", "reverend", "detective", "officer",
    "captain", "capt.", "capt", "sgt.", "sgt", "sergeant", "inspector", "insp.", "insp", "superintendent", "supt.",
    "supt", "lieutenant", "lt.", "lt", "colonel", "col.", "maj.", "cpl.", "pvt.", "adm.", "cmdr.", "cllr", "prof",
    "rev", "hon.",
    "star", "singer", "actor", "actress", "author",
})  # fmt: skip
# Titles written with a full stop ("Sen.", "Gov.", "Prof."): the stop is part of the title, not a sentence's end
ABBREVIATED_TITLES = frozenset(w for t in (*ROLES, *HONORIFICS) for w in t.split() if w.endswith("."))
_ORG_LAST = """
party council ministry department university college school hospital bank inc inc. corp corp. corporation ltd
llc plc group league association police court agency commission network news airlines airways foods board club fc
union organization organisation institute foundation service services authority committee senate parliament
congress house church times post journal tribune herald media studios motors technologies pharmaceuticals capital
partners holdings society trust convention administration office forces army navy guard zoo centre center assembly
cabinet government initiative democrats republicans labour conservatives tories company co. brands industries
airport federation fund bureau reserve unit team channel insurance energy telecom exchange cup olympics games
"""
ORG_LAST = frozenset(_ORG_LAST.split())
ORG_FIRST = frozenset({"bank", "university", "ministry", "department", "house", "church", "archdiocese", "council",
                       "court", "museum", "office", "institute", "federal", "national", "royal"})  # fmt: skip
_LOC_LAST = """
county province state river basin island islands valley street road park bay city lake mountain mountains coast
region district tunnel bridge beach peninsula sea ocean gulf strait square avenue village heights hills harbour
"""
LOC_LAST = frozenset(_LOC_LAST.split())
# Capitalised words of headlines that are neither people, organisations nor places
_NOT_NAMES = """
coronavirus covid covid-19 sars-cov-2 breaking exclusive watch live opinion review op-ed column editorial analysis
update explainer video photos podcast new year christmas easter monday tuesday wednesday thursday friday saturday
sunday january february march april june july august september october november december tv ceo pm am gmt diy hgv
qr vip lgbt lgbtq nyt faq ok q&a i.e covid19 brexit lockdown world news the you your we i it my a an may
mondays tuesdays wednesdays thursdays fridays saturdays sundays weekend phl
"""
NOT_NAMES = frozenset(_NOT_NAMES.split())
# Peoples and faiths: capitalised, often repeated, and not an entity of their own ("German", "Muslim")
DEMONYM_ENDINGS = ("ian", "ish", "ese", "ean")
FAITHS = frozenset({"muslim", "catholic", "islamic", "hindu", "buddhist", "sikh", "protestant", "orthodox"})
ACRONYM_LETTERS = range(2, 6)


def kind_of(words: tuple[str, ...], places: frozenset[str]) -> str | None:
    """PER, ORG, LOC or None for a name without a role word before it."""
    folded = place_form(" ".join(words))
    first, last = words[0].casefold(), words[-1].casefold()
    if (last in ORG_LAST and len(words) > 1) or (len(words) > 2 and first in ORG_FIRST and words[1] == "of"):
        return "ORG"  # before the places: "White House", "Victoria Police"
    if folded in places or (first == "the" and folded[4:] in places):
        return "LOC"
    if last in LOC_LAST and len(words) > 1:
        return "LOC"
    if len(words) == 1:
        return "ORG" if is_acronym(words[0]) or brand(words[0]) else None
    if all(w[:1].isupper() and not w.isupper() and w.replace("-", "").replace("'", "").isalpha() for w in words):
        return "PER" if len(words) <= 4 else None
    return "ORG"


def is_acronym(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return len(letters) in ACRONYM_LETTERS and all(c.isupper() for c in letters)


def demonym(word: str) -> bool:
    return (
        (word.casefold().endswith(DEMONYM_ENDINGS) or word.casefold() in FAITHS)
        and word[:1].isupper()
        and not word.isupper()
    )


def brand(word: str) -> bool:
    """A capital inside a word ("TikTok", "SpaceX", "ComfortDelGro") marks a company, unless it is a surname's
    ("McEnany", "MacArthur", "O'Brien", "DeSantis") or joins two names ("Australia-EU")."""
    letters = word.replace("'", "").replace("\u2019", "")
    if word.isupper() or "-" in word or letters.startswith(("Mc", "Mac", "O", "De", "Di", "La", "Le", "Van")):
        return False
    return any(c.isupper() for c in letters[1:])
