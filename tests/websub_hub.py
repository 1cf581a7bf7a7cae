"""A small WebSub hub for the tests, run as its own process: `python tests/websub_hub.py` prints its port.

POST / hub.mode=subscribe: 202, then verifies intent (GET the callback with a challenge) and keeps the
subscription. POST / hub.mode=publish&hub.url=TOPIC: fetches the topic and pushes it, signed with each
subscriber's secret (X-Hub-Signature: sha256=...), before answering 204. GET /subscriptions: what it holds (JSON).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sys
import threading
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUBSCRIPTIONS: dict[tuple[str, str], dict[str, object]] = {}  # (topic, callback) -> subscription
REQUESTS: list[dict[str, str]] = []
LOCK = threading.Lock()


def verify(form: dict[str, str]) -> None:
    challenge = secrets.token_hex(8)
    query = urllib.parse.urlencode(
        {
            "hub.mode": "subscribe",
            "hub.topic": form["hub.topic"],
            "hub.challenge": challenge,
            "hub.lease_seconds": form.get("hub.lease_seconds", ""),
        }
    )
    try:
        with urllib.request.urlopen(f"{form['hub.callback']}?{query}", timeout=10) as response:
            confirmed = response.status == 200 and response.read().decode() == challenge
    except OSError:
        confirmed = False
    if confirmed:
        with LOCK:
            SUBSCRIPTIONS[(form["hub.topic"], form["hub.callback"])] = {
                "topic": form["hub.topic"],
                "callback": form["hub.callback"],
                "secret": form.get("hub.secret"),
                "lease_seconds": form.get("hub.lease_seconds"),
            }


def distribute(topic: str) -> int:
    with urllib.request.urlopen(topic, timeout=10) as response:
        body, content_type = response.read(), response.headers.get("Content-Type", "application/xml")
    delivered = 0
    for subscription in [s for (t, _), s in list(SUBSCRIPTIONS.items()) if t == topic]:
        headers = {"Content-Type": content_type, "Link": f'<{topic}>; rel="self"'}
        if subscription["secret"]:
            digest = hmac.new(str(subscription["secret"]).encode(), body, hashlib.sha256).hexdigest()
            headers["X-Hub-Signature"] = f"sha256={digest}"
        request = urllib.request.Request(str(subscription["callback"]), data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=10) as reply:
            delivered += reply.status in (200, 202, 204)
    return delivered


class Hub(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        with LOCK:
            REQUESTS.append(form)
        if form.get("hub.mode") == "subscribe" and form.get("hub.callback") and form.get("hub.topic"):
            self._reply(202)
            threading.Thread(target=verify, args=(form,), daemon=True).start()
        elif form.get("hub.mode") == "publish":
            delivered = distribute(form.get("hub.url") or form.get("hub.topic", ""))
            self._reply(204 if delivered else 404)
        else:
            self._reply(400)

    def do_GET(self) -> None:
        body = json.dumps({"subscriptions": list(SUBSCRIPTIONS.values()), "requests": REQUESTS}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _reply(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
