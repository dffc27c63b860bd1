"""``ldp-aggregator serve`` gives all its workers one session key: a login holds on each."""

from __future__ import annotations

from pathlib import Path

import requests

from tests.aggregator.dashboard.pages import csrf_of
from tests.support.servers import ANALYST, start_server

TIMEOUT = 30
REQUESTS = 24  # each on a new connection, so the kernel spreads them over both workers


def test_a_login_holds_whichever_worker_answers(tmp_path: Path) -> None:
    server = start_server(tmp_path / "serve.sqlite3", workers=2)
    try:
        form = requests.get(f"{server.url}/dashboard/login", timeout=TIMEOUT)
        cookie = {"Cookie": form.headers["Set-Cookie"].split(";", 1)[0]}
        login = requests.post(
            f"{server.url}/dashboard/login",
            data={"token": ANALYST, "csrf_token": csrf_of(form.text)},
            headers=cookie,
            allow_redirects=False,
            timeout=TIMEOUT,
        )
        assert login.status_code == 302, login.text
        session = {"Cookie": login.headers["Set-Cookie"].split(";", 1)[0]}
        statuses = [
            requests.get(
                f"{server.url}/dashboard/", headers=session, allow_redirects=False, timeout=TIMEOUT
            ).status_code
            for _ in range(REQUESTS)
        ]
        assert statuses == [200] * REQUESTS
    finally:
        server.kill()
