"""GET /s/<code>: a share link's redirect, outside GraphQL. 302 to the stored article URL (http(s), normalized on
ingest: never an address taken from the request), 404 for a code we never issued, 410 for a deleted target."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from app.ratelimit.callers import client_address
from app.services import Services
from app.sharing.redirects import Outcome, ShareRedirects
from app.sharing.visits import visit_of

# The link is counted once per reader and day, so a browser may keep the redirect a little; a shared cache may not.
FOUND_HEADERS = {"cache-control": "private, max-age=90", "referrer-policy": "no-referrer", "x-robots-tag": "noindex"}
PAGE_HEADERS = {"referrer-policy": "no-referrer", "x-content-type-options": "nosniff",
                "content-security-policy": "default-src 'none'"}  # fmt: skip
CACHE_OF = {Outcome.MALFORMED: "public, max-age=86400", Outcome.UNKNOWN: "public, max-age=300",
            Outcome.GONE: "public, max-age=3600", Outcome.UNAVAILABLE: "no-store"}  # fmt: skip
RETRY_AFTER_S = "5"
PAGES = {
    Outcome.MALFORMED: (404, "This link does not exist."),
    Outcome.UNKNOWN: (404, "This link does not exist."),
    Outcome.GONE: (410, "The article this link led to is no longer available."),
    Outcome.UNAVAILABLE: (503, "This link cannot be followed right now. Please try again in a moment."),
}
TITLES = {404: "Link not found", 410: "Link gone", 503: "Try again soon"}
_PAGE = ("<!doctype html><html lang=en><meta charset=utf-8><title>{title}</title>"
         "<body><h1>{title}</h1><p>{text}</p></body></html>")  # fmt: skip


def share_link_routes(services: Callable[[], Services]) -> list[Route]:
    redirects: dict[str, ShareRedirects] = {}

    def redirects_of() -> ShareRedirects:
        if "current" not in redirects:
            current = services()
            redirects["current"] = ShareRedirects(current.db, current.redis, current.settings, current.share_key)
        return redirects["current"]

    async def follow(request: Request) -> Response:
        current = services()
        headers = request.headers
        address = client_address(request.client.host if request.client else None,
                                 ",".join(headers.getlist("x-forwarded-for")),
                                 current.rate_limits.trusted_proxies)  # fmt: skip
        visit = visit_of(request.method, headers.get("user-agent"), headers.get("referer"),
                         headers.get("sec-purpose") or headers.get("purpose"), address)  # fmt: skip
        followed = await redirects_of().follow(request.path_params["code"], visit)
        if followed.outcome is Outcome.FOUND and followed.url:
            return RedirectResponse(followed.url, status_code=302, headers=FOUND_HEADERS)
        status, text = PAGES[followed.outcome]
        answer = {**PAGE_HEADERS, "cache-control": CACHE_OF[followed.outcome]}
        if status == 503:
            answer["retry-after"] = RETRY_AFTER_S
        return HTMLResponse(_PAGE.format(title=TITLES[status], text=text), status, headers=answer)

    return [Route("/s/{code}", follow, methods=["GET", "HEAD"], name="share_link")]
