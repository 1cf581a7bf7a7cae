"""Where an outlet is and what kind it is, inferred from its addresses and language when nobody said (pure).

Evidence, strongest first: a well-known outlet on a generic domain (this project's own short list), the country-code
top-level domain of its site or feed (.co.uk -> GB, .de -> DE), then its language where one country is that
language's home (weak: `de` is also Austria's and Switzerland's, so only a language of one main country counts).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from urllib.parse import urlsplit

from app.places.countries import country_names


class OutletKind(enum.StrEnum):
    WIRE = "wire"  # a news agency other outlets reprint
    NATIONAL = "national"
    LOCAL = "local"
    INTERNATIONAL = "international"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Outlet:
    country: str | None
    kind: OutletKind


# Registrable domains of well-known outlets whose domain says nothing of their country (made by the project)
KNOWN_OUTLETS: dict[str, Outlet] = {
    "reuters.com": Outlet("GB", OutletKind.WIRE), "apnews.com": Outlet("US", OutletKind.WIRE),
    "afp.com": Outlet("FR", OutletKind.WIRE), "bloomberg.com": Outlet("US", OutletKind.WIRE),
    "upi.com": Outlet("US", OutletKind.WIRE), "efe.com": Outlet("ES", OutletKind.WIRE),
    "ansa.it": Outlet("IT", OutletKind.WIRE), "dpa.com": Outlet("DE", OutletKind.WIRE),
    "bbc.com": Outlet("GB", OutletKind.INTERNATIONAL), "bbc.co.uk": Outlet("GB", OutletKind.NATIONAL),
    "bbci.co.uk": Outlet("GB", OutletKind.NATIONAL),
    "cnn.com": Outlet("US", OutletKind.NATIONAL), "nytimes.com": Outlet("US", OutletKind.NATIONAL),
    "washingtonpost.com": Outlet("US", OutletKind.NATIONAL), "wsj.com": Outlet("US", OutletKind.NATIONAL),
    "foxnews.com": Outlet("US", OutletKind.NATIONAL), "nbcnews.com": Outlet("US", OutletKind.NATIONAL),
    "cbsnews.com": Outlet("US", OutletKind.NATIONAL), "abcnews.go.com": Outlet("US", OutletKind.NATIONAL),
    "npr.org": Outlet("US", OutletKind.NATIONAL), "usatoday.com": Outlet("US", OutletKind.NATIONAL),
    "politico.com": Outlet("US", OutletKind.NATIONAL), "theguardian.com": Outlet("GB", OutletKind.NATIONAL),
    "independent.co.uk": Outlet("GB", OutletKind.NATIONAL), "aljazeera.com": Outlet("QA", OutletKind.INTERNATIONAL),
    "dw.com": Outlet("DE", OutletKind.INTERNATIONAL), "france24.com": Outlet("FR", OutletKind.INTERNATIONAL),
    "euronews.com": Outlet("FR", OutletKind.INTERNATIONAL), "rt.com": Outlet("RU", OutletKind.INTERNATIONAL),
    "scmp.com": Outlet("HK", OutletKind.NATIONAL), "japantimes.co.jp": Outlet("JP", OutletKind.NATIONAL),
    "abc.net.au": Outlet("AU", OutletKind.NATIONAL), "cbc.ca": Outlet("CA", OutletKind.NATIONAL),
    "timesofindia.indiatimes.com": Outlet("IN", OutletKind.NATIONAL),
    "latimes.com": Outlet("US", OutletKind.LOCAL), "straitstimes.com": Outlet("SG", OutletKind.NATIONAL),
    "channelnewsasia.com": Outlet("SG", OutletKind.NATIONAL), "philstar.com": Outlet("PH", OutletKind.NATIONAL),
    "gmanetwork.com": Outlet("PH", OutletKind.NATIONAL), "abs-cbn.com": Outlet("PH", OutletKind.NATIONAL),
    "dailymail.co.uk": Outlet("GB", OutletKind.NATIONAL), "nzherald.co.nz": Outlet("NZ", OutletKind.NATIONAL),
}  # fmt: skip
# Languages spoken chiefly in one country (weak evidence; English, Spanish, French, Arabic... are not among them)
LANGUAGE_HOMES = {
    "ja": "JP", "ko": "KR", "it": "IT", "pl": "PL", "nl": "NL", "cs": "CZ", "hu": "HU", "ro": "RO", "el": "GR",
    "fi": "FI", "sv": "SE", "da": "DK", "nb": "NO", "no": "NO", "uk": "UA", "tr": "TR", "he": "IL", "th": "TH",
    "vi": "VN", "id": "ID", "fa": "IR", "bg": "BG", "hr": "HR", "sk": "SK", "sl": "SI", "lt": "LT", "lv": "LV",
    "et": "EE", "is": "IS", "ka": "GE", "hy": "AM", "de": "DE", "ru": "RU",
}  # fmt: skip
TLD_COUNTRIES = {"uk": "GB"}  # the one ccTLD that is not its country's ISO code
GENERIC_CCTLDS = frozenset({"tv", "io", "co", "me", "fm", "ai", "ly", "to", "cc", "ws", "gg", "am"})  # used as words


def infer(site_url: str | None, feed_url: str | None, language: str | None) -> Outlet:
    """Country and kind of an outlet nobody described; kind stays UNKNOWN unless the outlet is a well-known one."""
    for url in (site_url, feed_url):
        known = _known(_host(url))
        if known is not None:
            return known
    for url in (site_url, feed_url):
        country = tld_country(_host(url))
        if country is not None:
            return Outlet(country, OutletKind.UNKNOWN)
    home = LANGUAGE_HOMES.get((language or "").split("-")[0].lower())
    return Outlet(home, OutletKind.UNKNOWN)


def tld_country(host: str) -> str | None:
    tld = host.rsplit(".", 1)[-1] if "." in host else ""
    code = TLD_COUNTRIES.get(tld, tld.upper())
    return code if len(tld) == 2 and tld not in GENERIC_CCTLDS and code in country_names() else None


def _known(host: str) -> Outlet | None:
    labels = host.split(".")
    for start in range(len(labels) - 1):  # "feeds.bbci.co.uk", then "bbci.co.uk", ...
        found = KNOWN_OUTLETS.get(".".join(labels[start:]))
        if found is not None:
            return found
    return None


def _host(url: str | None) -> str:
    try:
        host = urlsplit(url or "").hostname or ""
    except ValueError:
        return ""
    return host.lower().rstrip(".").removeprefix("www.")
