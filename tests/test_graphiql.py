"""GraphiQL offline: the page and its files come from the API itself, and in a real browser (Debian's chromium,
driven by Playwright, every request to another origin refused) the editor renders with graphql/'s documents as tabs,
a query returns data and a subscription pushes an event. The browser tests skip, saying why, without chromium."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, Route, async_playwright, expect

from app.api import graphiql
from app.api.asgi import create_app
from app.api.graphiql import CONTENT_SECURITY_POLICY, GraphiQLPage
from app.outbox.relay import relay
from app.services import Services
from app.settings import Settings
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import GRAPHQL_DIR, until_listening
from tests.newsroom import add_breaking_event, add_source

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]  # fmt: skip
# Counts what the page's Content-Security-Policy refused (nothing should be).
WATCH_CSP = """document.addEventListener("securitypolicyviolation",
  (e) => (window.cspViolations = window.cspViolations || []).push(e.violatedDirective + " " + e.blockedURI));"""
TIMEOUT_MS = 20_000  # a first start of chromium on a busy machine


def packaged(path: str) -> bytes:
    return (Path(graphiql.__file__).parent / "static" / path.removeprefix("/graphiql/")).read_bytes()


async def test_the_page_and_its_files_come_from_the_api(api_url: str) -> None:
    async with httpx.AsyncClient(base_url=api_url) as http:
        page = await http.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "default-src 'self'" in CONTENT_SECURITY_POLICY
        assert not re.search(r"(src|href)=\"(https?:)?//", page.text)  # no CDN
        files = re.findall(r"(?:src|href)=\"(/graphiql/[^\"]+)\"", page.text)
        assert len(files) == 6  # React, ReactDOM, GraphiQL's script and stylesheet, our script and stylesheet
        for path in files:
            served = await http.get(path, headers={"accept-encoding": "gzip"})
            assert served.status_code == 200, path
            assert served.content == packaged(path), path
        for outside in (
            "/graphiql/%2e%2e/__init__.py",
            "/graphiql/..%2fpage.html",
            "/graphiql/%2e%2e/documents/Health.graphql",
        ):
            assert (await http.get(outside)).status_code == 404, outside


async def test_no_page_and_no_files_when_graphiql_is_off(settings: Settings, services: Services) -> None:
    app = create_app(settings.model_copy(update={"graphiql": False}), services)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as http:
        assert (await http.get("/graphql", headers={"accept": "text/html"})).status_code == 404
        assert (await http.get("/graphiql/page.js")).status_code == 404
        assert (await http.post("/graphql", json={"query": "{ health { ok } }"})).status_code == 200


def test_a_document_cannot_end_the_pages_data_block(tmp_path: Path) -> None:
    hostile = "# </script><script>alert(1)</script><!--\nquery Hostile { health { ok } }\n"
    (tmp_path / "Hostile.graphql").write_text(hostile)
    html = GraphiQLPage(tmp_path).html
    assert "alert(1)</script>" not in html
    assert html.count("</script>") == 5  # the four files' and the data block's own


@dataclass
class Browser:
    page: Page
    refused: list[str] = field(default_factory=list)  # requests to anywhere but the API
    sockets: list[str] = field(default_factory=list)

    async def open_tab(self, name: str) -> None:
        await self.page.locator(".graphiql-tab-button", has_text=re.compile(f"^{name}$")).click()
        # GraphiQL reads the operation's name from the editor a moment after a tab change: run it only then
        await self.page.wait_for_function(
            "name => document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.operationName === name",
            arg=name,
        )

    async def run(self) -> None:
        await self.page.locator(".graphiql-execute-button").click()

    async def csp_violations(self) -> list[str]:
        violations: list[str] = await self.page.evaluate("window.cspViolations || []")
        return violations


@pytest.fixture(scope="session")
def chromium() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.skip(f"no chromium at {path}: `apt-get install -y chromium` to run the GraphiQL browser tests")
    return path


@pytest.fixture
async def browser(chromium: str, api_url: str, tmp_path: Path) -> AsyncIterator[Browser]:
    """GraphiQL at GET /graphql in headless chromium; only the API's own origin is reachable."""
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=chromium, headless=True, args=FLAGS, timeout=TIMEOUT_MS
        )
        context.set_default_timeout(TIMEOUT_MS)
        expect.set_options(timeout=TIMEOUT_MS)
        browser = Browser(await context.new_page())

        async def only_the_api(route: Route) -> None:
            if route.request.url.startswith(api_url + "/"):
                await route.continue_()
            else:
                browser.refused.append(route.request.url)
                await route.abort("internetdisconnected")

        await context.route("**/*", only_the_api)
        await context.add_init_script(WATCH_CSP)
        browser.page.on("websocket", lambda socket: browser.sockets.append(socket.url))
        await browser.page.goto(api_url + "/graphql")
        try:
            yield browser
        finally:
            await context.close()


async def test_graphiql_renders_offline_and_a_query_returns_data(
    browser: Browser, services: Services, settings: Settings, tmp_path: Path
) -> None:
    await add_source(services, settings, "Offline Wire")
    page = browser.page
    await expect(page.locator(".graphiql-query-editor .CodeMirror")).to_be_visible()
    titles = await page.locator(".graphiql-tab").all_inner_texts()
    assert sorted(titles) == sorted(path.stem for path in GRAPHQL_DIR.glob("*.graphql"))
    assert titles[0] == "Articles"  # a query that runs as it is opens the page

    await browser.open_tab("Sources")
    await browser.run()
    await expect(page.locator(".result-window")).to_contain_text('"name": "Offline Wire"')
    await expect(page.locator(".result-window")).to_contain_text('"status": "ACTIVE"')
    await page.screenshot(path=tmp_path / "graphiql-query.png")
    assert browser.refused == []
    assert await browser.csp_violations() == []


async def test_a_subscription_run_from_graphiql_pushes_events(
    api_url: str, browser: Browser, services: Services, tmp_path: Path
) -> None:
    await browser.open_tab("BreakingNews")
    await browser.run()
    await until_listening(services, BREAKING_TOPIC)  # the page's WebSocket subscribed through the API
    await add_breaking_event(services, 5)
    assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 1
    await expect(browser.page.locator(".result-window")).to_contain_text('"title": "Story 5"')
    await browser.page.screenshot(path=tmp_path / "graphiql-subscription.png")
    assert browser.sockets == [api_url.replace("http://", "ws://") + "/graphql"]
    assert browser.refused == []
    assert await browser.csp_violations() == []
