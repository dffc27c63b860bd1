"""docs/operations.md's nginx site, run as written in front of a real collector over TLS.

The site block is read from the document (so the documented configuration is the tested
one); only its certificate paths and ports are replaced. ``make test`` installs nginx
(as root, with apt-get); without it this test fails saying so.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import requests

from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.reports import envelopes, payloads
from tests.support.servers import ADMIN, ANALYST, bearer, free_port, start_server

ROOT = Path(__file__).resolve().parents[3]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
pytestmark = pytest.mark.timeout(120)


def documented_site() -> str:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    match = re.search(r"```nginx\n(.*?)```", text, re.S)
    assert match, "docs/operations.md has no nginx block"
    return match.group(1)


def test_the_documented_site_has_what_the_text_promises() -> None:
    site = documented_site()
    for directive in (
        "access_log off;",
        'proxy_set_header X-Forwarded-For "";',
        "client_max_body_size 4m;",
        "proxy_request_buffering on;",
    ):
        assert directive in site


def test_uploads_and_estimates_pass_through_the_documented_tls_proxy(tmp_path: Path) -> None:
    assert Path(NGINX).exists(), "nginx is not installed: make test installs it (apt-get)"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server = start_server(tmp_path / "behind-proxy.sqlite3")
    port = free_port()
    site = (
        documented_site()
        .replace("/etc/ssl/ldp/fullchain.pem", str(cert))
        .replace("/etc/ssl/ldp/privkey.pem", str(key))
        .replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
        .replace("http://127.0.0.1:8000", server.url)
    )
    (tmp_path / "nginx.conf").write_text(
        # user root: the workers must write request bodies into this root-only folder.
        f"daemon off;\nuser root;\npid {tmp_path}/nginx.pid;\n"
        f"error_log {tmp_path}/error.log;\n"
        f"events {{}}\nhttp {{\n client_body_temp_path {tmp_path}/body;\n"
        f" proxy_temp_path {tmp_path}/proxy;\n{site}}}\n"
    )
    proxy = subprocess.Popen(
        [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        _wait_for(port, proxy)
        base = f"https://127.0.0.1:{port}"
        created = requests.post(
            f"{base}/v1/tasks",
            headers=bearer(ADMIN),
            verify=str(cert),
            timeout=10,
            json={
                "task_id": "tls",
                "mechanism": "grr",
                "epsilon": 8,
                "domain": ["a", "b"],
                "min_batch_size": 1,
            },
        )
        assert created.status_code == 201, created.text
        task = TaskConfig.from_dict(created.json())
        reports = payloads(task, ["a"] * 30 + ["b"] * 10, np.random.default_rng(1))
        uploaded = requests.post(
            f"{base}/v1/tasks/tls/reports",
            verify=str(cert),
            timeout=10,
            data=encode_batch(task, envelopes(task, reports)),
            headers={"Content-Type": "application/json", "X-Forwarded-For": "203.0.113.7"},
        )
        assert uploaded.status_code == 200 and uploaded.json()["accepted"] == 40
        too_big = requests.post(
            f"{base}/v1/tasks/tls/reports",
            verify=str(cert),
            timeout=10,
            data=b"x" * (4 * 1024 * 1024 + 1),
            headers={"Content-Type": "application/json"},
        )
        assert too_big.status_code == 413  # refused by the proxy at the collector's limit
        at_limit = requests.post(
            f"{base}/v1/tasks/tls/reports",
            verify=str(cert),
            timeout=10,
            data=b"{" + b" " * (4 * 1024 * 1024 - 2) + b"}",
            headers={"Content-Type": "application/json"},
        )
        assert at_limit.status_code == 400  # passed through: the collector parsed it
        assert at_limit.headers["Content-Type"].startswith("application/problem+json")
        answer = requests.post(
            f"{base}/v1/tasks/tls/estimates",
            headers=bearer(ANALYST),
            verify=str(cert),
            timeout=10,
            json={},
        ).json()
        assert answer["n"] == 40
        assert not list(tmp_path.glob("*access*"))  # access_log off: no client addresses
        log = (tmp_path / "behind-proxy.log").read_bytes()
        assert b"203.0.113.7" not in log and b"127.0.0.1" not in log.replace(
            server.url.encode(), b""
        )
    finally:
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=30)
        server.kill()


def _wait_for(port: int, proxy: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proxy.poll() is not None:
            pytest.fail(f"nginx exited: {proxy.stderr.read().decode() if proxy.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail("nginx did not listen within 20 s")
