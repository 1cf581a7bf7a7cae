"""The reference GraphQL-over-HTTP audit: `graphql-http`'s serverAudits from npm (tests/js/audit.mjs, the version pinned
by tests/js/package-lock.json) against the served API; every audit, MUST, SHOULD and MAY, is to pass. It skips, saying
why, where node or the packages are missing (the `node` fixture)."""

from __future__ import annotations

import asyncio
import json

from app.services import Services
from tests.conftest import NODE_TOOLS


async def test_the_graphql_http_audit_passes_every_check(node: str, api_url: str, services: Services) -> None:
    audit = await asyncio.create_subprocess_exec(node, str(NODE_TOOLS / "audit.mjs"), f"{api_url}/graphql",
                                                 cwd=NODE_TOOLS, stdout=asyncio.subprocess.PIPE)  # fmt: skip
    output, _ = await asyncio.wait_for(audit.communicate(), 120)
    *lines, summary = output.decode().splitlines()
    print(summary)
    failed = [line for line in map(json.loads, lines) if line["status"] != "ok"]
    assert failed == [], summary
    assert summary == f"{len(lines)} ok, 0 warnings, 0 errors of {len(lines)}"
    assert len(lines) >= 61  # graphql-http 1.23's audits, all of them run
    assert audit.returncode == 0
