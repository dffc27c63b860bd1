"""Who may see the dashboard: a login with the analyst (or admin) token, a session, CSRF.

The login form takes a token and checks it with the collector's roles
(:class:`ldp_telemetry.aggregator.core.auth.Roles`), as the API does. The session (Flask's
cookie, signed with ``SECRET_KEY``; Secure, HttpOnly, SameSite and limited to ``/dashboard``, see
:mod:`ldp_telemetry.aggregator.core.config`) keeps the token's SHA-256 — the form the store keeps
it in, never the token — and each request looks its role up again, so revoking a token
(``ldp-aggregator tokens revoke``) ends its dashboard sessions too.

Every POST form carries a per-session random token, compared in constant time; the others
are GET forms with no side effects. The token never travels in a URL.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from flask import Flask, abort, request, session

from ldp_telemetry.aggregator.core.auth import hash_token
from ldp_telemetry.aggregator.dashboard.resources import role_of_digest

ROLES = ("analyst", "admin")  # roles that may look; an admin token works wherever an analyst's does
CSRF_FIELD = "csrf_token"


def init_app(app: Flask) -> None:
    """Give the app a secret key if none is configured (one per process: see docs/dashboard.md)."""
    if not app.config.get("SECRET_KEY"):
        # `ldp-aggregator serve` draws one for all its workers (LDP_SECRET_KEY); an app made
        # otherwise (tests, a bare WSGI import) gets its own, so its sessions are its own.
        app.config["SECRET_KEY"] = secrets.token_hex(32)
    app.config["SECRET_KEY"] = str(app.config["SECRET_KEY"])


def log_in(token: str) -> str | None:
    """Start a session for a token that may look; return its role, or None."""
    digest = hash_token(token)
    role = role_of_digest(digest)
    if role not in ROLES:
        return None
    session.clear()  # a fresh session (and CSRF token) at login: no fixation
    session["token_sha256"] = digest
    session.permanent = True  # expires after PERMANENT_SESSION_LIFETIME
    return role


def current_role() -> str | None:
    """Return the role of this request's session, looked up again; None if there is none."""
    digest = session.get("token_sha256")
    if not isinstance(digest, str):
        return None
    role = role_of_digest(digest)
    return role if role in ROLES else None


def log_out() -> None:
    """End the session."""
    session.clear()


def csrf_token() -> str:
    """Return this session's CSRF token (made on first use)."""
    token = session.get(CSRF_FIELD)
    if not isinstance(token, str):
        token = session[CSRF_FIELD] = secrets.token_urlsafe(32)
    return token


def check_csrf() -> None:
    """Refuse (400) a POST whose form does not carry this session's CSRF token."""
    sent = request.form.get(CSRF_FIELD, "")
    expected = session.get(CSRF_FIELD)
    if not isinstance(expected, str) or not hmac.compare_digest(sent, expected):
        abort(
            400,
            "the form is out of date or not from this dashboard: reload it and retry (if this "
            "repeats, the browser is not keeping the session cookie, which is Secure: open the "
            "dashboard over HTTPS, or see LDP_SESSION_COOKIE_SECURE in docs/dashboard.md)",
        )


def safe_next(target: str | None, default: str) -> str:
    """Return ``target`` if it is a dashboard path, else ``default`` (no open redirect)."""
    if not target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/dashboard"):
        return default
    if "\\" in target:
        return default
    return target
