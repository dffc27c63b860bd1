"""The task page's GET form: candidates, a UTC time range, a confidence level, a group_by.

Each field is parsed into what the JSON API takes, then checked by the API's own parsers
(:func:`ldp_telemetry.aggregator.core.analysis.query.parse_window`,
:func:`ldp_telemetry.aggregator.core.analysis.query.parse_candidates`,
:func:`ldp_telemetry.aggregator.core.analysis.query.check_cost`), so the page refuses exactly what
the API refuses, with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from flask import current_app

from ldp_telemetry.aggregator.core.analysis.query import (
    Breakdown,
    Window,
    check_cost,
    parse_breakdown,
    parse_candidates,
    parse_window,
)
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.shared import TaskConfig


class FormError(ValueError):
    """A field the page cannot use; the message says what to fix."""


@dataclass(frozen=True)
class TaskQuery:
    """The form's fields as typed."""

    candidates: str = ""
    start: str = ""
    end: str = ""
    level: str = ""
    group_by: str = ""  # one of the task's dimensions (empty: no breakdown)

    @classmethod
    def from_args(cls, args: Mapping[str, str]) -> TaskQuery:
        """Return the fields of a query string (missing ones empty)."""
        names = ("candidates", "start", "end", "level", "group_by")
        return cls(*(str(args.get(name, "")).strip() for name in names))

    def args(self) -> dict[str, str]:
        """Return the non-empty fields, for links that keep the same view (downloads)."""
        fields = {"candidates": self.candidates, "start": self.start, "end": self.end}
        fields |= {"level": self.level, "group_by": self.group_by}
        return {k: v for k, v in fields.items() if v}

    def breakdown(self, config: TaskConfig) -> Breakdown | None:
        """Return the breakdown asked for (None: none), checked as the API checks it."""
        if not self.group_by:
            return None
        try:
            return parse_breakdown(config, {"group_by": [self.group_by]})
        except ApiError as error:
            raise FormError(error.detail) from None

    def window(self) -> Window:
        """Return the range and level, checked as the API checks them."""
        body: dict[str, Any] = {"start": _time(self.start, "start"), "end": _time(self.end, "end")}
        if self.level:
            try:
                body["level"] = float(self.level)
            except ValueError:
                raise FormError("the confidence level must be a number such as 0.95") from None
        try:
            return parse_window(body)
        except ApiError as error:
            raise FormError(error.detail) from None

    def candidate_list(self) -> list[str]:
        """Return the candidates typed, one per line (blank lines ignored)."""
        return [line.strip() for line in self.candidates.splitlines() if line.strip()]


def checked_candidates(config: TaskConfig, raw: list[str] | None) -> list[Any] | None:
    """Return the candidates as the API parses them, or raise FormError with its reason."""
    try:
        candidates = parse_candidates(config, raw, int(current_app.config["MAX_CANDIDATES"]))
        check_cost(config, candidates, int(current_app.config["MAX_ESTIMATE_WORK"]))
    except ApiError as error:
        raise FormError(error.detail) from None
    return candidates


def _time(text: str, name: str) -> int | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise FormError(f"{name} must be a date and time such as 2026-01-31T00:00 (UTC)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())
