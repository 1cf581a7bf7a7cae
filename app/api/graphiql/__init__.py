"""GraphiQL served by the API itself: the page GET /graphql answers in a browser, its files under /graphiql/ (the
vendored ones from scripts/vendor_graphiql.sh), and the operation documents of graphql/ as its ready tabs."""

from __future__ import annotations

import json
from pathlib import Path
from string import Template

from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from graphql import NonNullTypeNode, OperationDefinitionNode, OperationType, parse

HERE = Path(__file__).parent
# The repository's graphql/ folder: a link in a checkout (and so in an editable install or the image), copied into a
# wheel as package data. Read once, when the app is made.
DOCUMENTS = HERE / "documents"
# The page runs no inline script and loads nothing from another origin; the stylesheet's fonts and icons are data:
# URLs. Subscriptions connect back to the same host ('self' covers ws: and wss: there).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; font-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
KIND_ORDER = (OperationType.QUERY, OperationType.SUBSCRIPTION, OperationType.MUTATION)


def tab(text: str) -> tuple[tuple[int, bool], dict[str, str]]:
    """A GraphiQL tab for one document, and where it sorts: by kind, then whether it needs variables (they are in
    place as nulls to fill in)."""
    operation = next(d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode))
    required = {
        v.variable.name.value: None
        for v in operation.variable_definitions or ()
        if isinstance(v.type, NonNullTypeNode) and v.default_value is None
    }
    fields = {"query": text} | ({"variables": json.dumps(required, indent=2)} if required else {})
    return (KIND_ORDER.index(operation.operation), bool(required)), fields


def tabs(folder: Path = DOCUMENTS) -> list[dict[str, str]]:
    """Queries first, then subscriptions, then mutations; of each kind, those that run as they are first (GraphiQL
    opens on the first tab and leaves out its variables), each group by document name."""
    by_name = [tab(path.read_text()) for path in sorted(folder.glob("*.graphql"))]
    return [fields for _, fields in sorted(by_name, key=lambda order_and_fields: order_and_fields[0])]  # stable


class GraphiQLPage:
    def __init__(self, folder: Path = DOCUMENTS) -> None:
        data = json.dumps(tabs(folder)).replace("<", "\\u003c")  # no `</script>` in a document ends the block
        self.html = Template((HERE / "page.html").read_text()).substitute(tabs=data)

    def response(self) -> HTMLResponse:
        return HTMLResponse(self.html, headers={"content-security-policy": CONTENT_SECURITY_POLICY})


def graphiql_files() -> Mount:
    """The page's script, stylesheet and the vendored bundles, compressed for browsers that ask."""
    return Mount("/graphiql", app=GZipMiddleware(StaticFiles(directory=HERE / "static")), name="graphiql")
