"""The dashboard's pages: task list, task page, chart downloads, planner, login and logout.

Views gather what the JSON API would answer (:mod:`ldp_telemetry.aggregator.dashboard.figures`) and
hand it to templates; they hold no math.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from werkzeug.exceptions import HTTPException

from ldp_telemetry.aggregator.core.analysis.query import Window
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.core.tasks import find_task
from ldp_telemetry.aggregator.dashboard import access, charts, figures, forms
from ldp_telemetry.aggregator.dashboard.resources import get_store
from ldp_telemetry.shared.dimensions import DEFAULT_MIN_SLICE_SIZE
from ldp_telemetry.shared.estimates import z_value
from ldp_telemetry.shared.mechanisms.registry import plan

bp = Blueprint(
    "dashboard",
    __name__,
    url_prefix="/dashboard",
    template_folder="templates",
    static_folder="static",
)
OPEN_ENDPOINTS = {"dashboard.login", "dashboard.static"}
# The pages load nothing from elsewhere and run no script; inline SVG needs no exception.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@bp.before_request
def require_login() -> Any:
    """Send a visitor without a valid session to the login form, remembering the page."""
    if request.endpoint in OPEN_ENDPOINTS or access.current_role() is not None:
        return None
    if request.method == "GET":
        session["next"] = request.full_path  # kept in the session, not in the login URL
    return redirect(url_for("dashboard.login"))


@bp.after_request
def secure(response: Response) -> Response:
    """Add the security headers to every dashboard response."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


@bp.context_processor
def helpers() -> dict[str, Any]:
    """Give templates the CSRF token, the role and the number formats."""
    return {
        "csrf_token": access.csrf_token,
        "role": access.current_role,
        "when": figures.when,
        "fmt": format_cell,
    }


@bp.errorhandler(ApiError)
def api_problem(error: ApiError) -> tuple[str, int]:
    """Show an API problem (e.g. an unknown task) as a page."""
    return render_template(
        "dashboard/error.html", status=error.status, detail=error.detail
    ), error.status


@bp.errorhandler(HTTPException)
def http_problem(error: HTTPException) -> tuple[str, int]:
    """Show an HTTP error (e.g. a refused form) as a page."""
    status = error.code or 500
    return render_template("dashboard/error.html", status=status, detail=error.description), status


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """Show the login form; on a valid analyst or admin token, start a session."""
    error = None
    if request.method == "POST":
        access.check_csrf()
        after = access.safe_next(session.get("next"), url_for("dashboard.index"))
        if access.log_in(request.form.get("token", "").strip()):
            return redirect(after)
        error = "This token is not an analyst or admin token of this collector."
    status = 401 if error else 200
    return render_template("dashboard/login.html", error=error), status


@bp.post("/logout")
def logout() -> Any:
    """End the session."""
    access.check_csrf()
    access.log_out()
    return redirect(url_for("dashboard.login"))


@bp.get("/")
def index() -> str:
    """List every task with its reports, buckets and the collector's ingest counts."""
    # The list reads each task's total only: its buckets are on the task's page (each read
    # scans the task's sums rows, and the list must stay fast with many large tasks).
    summaries = [
        (stored.config, figures.count(stored.config)) for stored in get_store().list_tasks()
    ]
    return render_template("dashboard/index.html", tasks=summaries, counts=figures.ingest_counts())


@dataclass
class TaskView:
    """Everything a task's pages show."""

    summary: figures.TaskSummary
    query: forms.TaskQuery
    charts: list[charts.Chart] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    range_body: Mapping[str, Any] | None = None
    hh_body: Mapping[str, Any] | None = None
    hidden_buckets: int = 0
    breakdown_body: Mapping[str, Any] | None = None
    changes_body: Mapping[str, Any] | None = None


@bp.get("/tasks/<task_id>")
def task(task_id: str) -> str:
    """Show a task: reports per bucket, estimates over the range and over time."""
    view = task_view(task_id)
    return _render_task("dashboard/task.html", view)


@bp.get("/tasks/<task_id>/heavy-hitters")
def heavy_hitters(task_id: str) -> str:
    """Show the strings an hh task's sketches find without a candidate list."""
    view = hh_view(task_id)
    return _render_task("dashboard/heavy_hitters.html", view)


def _render_task(template: str, view: TaskView) -> str:
    config = view.summary.config
    return render_template(
        template,
        view=view,
        config=config,
        counts=figures.ingest_counts(),
        needs_candidates=figures.needs_candidates(config),
        discovers=figures.discovers(config),
        hh_top=figures.HH_DEFAULT_CANDIDATES,
    )


@bp.get("/tasks/<task_id>/<name>.<fmt>")
def download(task_id: str, name: str, fmt: str) -> Response:
    """Download a chart of a task's pages as CSV (its numbers) or SVG (its drawing)."""
    if fmt not in ("csv", "svg"):
        abort(404)
    view = hh_view(task_id) if name == "heavy-hitters" else task_view(task_id)
    chart = next((c for c in view.charts if c.name == name), None)
    if chart is None:
        abort(404, f"this view has no chart {name!r}")
    body, mimetype = (chart.csv(), "text/csv") if fmt == "csv" else (chart.drawing, "image/svg+xml")
    filename = re.sub(r"[^A-Za-z0-9._-]", "_", f"{task_id}-{name}.{fmt}")
    return Response(
        body,
        mimetype=mimetype,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def task_view(task_id: str) -> TaskView:
    """Return what the task page shows for the request's form fields."""
    config = find_task(task_id, get_store()).config
    view = TaskView(figures.summarize(config), forms.TaskQuery.from_args(request.args))
    try:
        window = view.query.window()
    except forms.FormError as error:
        view.problems.append(str(error))
        return view
    candidates = _candidates(view)
    if candidates is None and figures.needs_candidates(config):
        # No estimates to draw: the reports per bucket alone.
        counts = figures.bucket_counts(config, window, view.summary.buckets)
        view.hidden_buckets = counts.hidden
        view.charts.append(charts.reports_chart(config, counts))
        return view
    # Each bucket's answer says its n too (the problem below min_batch_size as well).
    series = figures.over_time(config, candidates, window, view.summary.buckets)
    view.hidden_buckets = series.hidden
    view.charts.append(charts.reports_chart(config, series))
    total = figures.unbounded(window, view.summary.reports)
    view.range_body, problem = figures.range_answer(config, candidates, window, total)
    if view.range_body is not None:
        view.charts.append(charts.top_chart(config, view.range_body))
    elif problem is not None:
        view.notes.append(f"Estimates over the range: {problem.detail}")
    if any(b.body is not None for b in series.buckets):
        view.charts.append(charts.over_time_chart(config, series))
    _breakdown(view, candidates, window)
    view.changes_body, reason = figures.changes(
        config, candidates, view.summary.buckets, window.level
    )
    if view.changes_body is not None:
        view.charts.append(charts.changes_chart(config, view.changes_body))
    elif len(view.summary.buckets) > 1:
        view.notes.append(f"What changed: {reason}")
    return view


def _breakdown(view: TaskView, candidates: list[Any] | None, window: Window) -> None:
    """Add the estimates by the chosen dimension, if one is (a task with dimensions)."""
    config = view.summary.config
    try:
        breakdown = view.query.breakdown(config)
    except forms.FormError as error:
        view.problems.append(str(error))
        return
    if breakdown is None:
        return
    view.breakdown_body, problem = figures.range_answer(config, candidates, window, None, breakdown)
    if view.breakdown_body is not None:
        view.charts.append(charts.breakdown_chart(config, view.breakdown_body))
    elif problem is not None:
        view.notes.append(f"Estimates by {view.query.group_by}: {problem.detail}")


def hh_view(task_id: str) -> TaskView:
    """Return what the heavy-hitters page shows for the request's range and level."""
    config = find_task(task_id, get_store()).config
    view = TaskView(figures.summarize(config), forms.TaskQuery.from_args(request.args))
    if not figures.discovers(config):
        abort(404, f"task {task_id!r} ({config.mechanism}) cannot discover its frequent values")
    try:
        window = view.query.window()
    except forms.FormError as error:
        view.problems.append(str(error))
        return view
    total = figures.unbounded(window, view.summary.reports)
    view.hh_body, problem = figures.discovered(config, window, total)
    if view.hh_body is not None:
        view.charts.append(charts.heavy_hitters_chart(config, view.hh_body))
    elif problem is not None:
        view.problems.append(problem.detail)
    return view


def _candidates(view: TaskView) -> list[Any] | None:
    """Return the checked candidates: as typed, else the task's default (None)."""
    config = view.summary.config
    typed = view.query.candidate_list()
    if not typed and figures.needs_candidates(config):
        view.notes.append("Type candidate values (one per line) to see their estimates.")
        return None
    try:
        return forms.checked_candidates(config, typed or None)
    except forms.FormError as error:
        view.problems.append(str(error))
        return None


@dataclass(frozen=True)
class PlanForm:
    """The planner's fields as typed, and its result."""

    domain_size: str
    devices: str
    epsilon: str
    slices: str = ""  # the breakdown's slices the reports spread over (empty: none)


@dataclass(frozen=True)
class SlicePlan:
    """The same workload split evenly over ``slices``: each mechanism's standard error of a
    count in one slice, and whether a slice would be rolled up (below min_slice_size)."""

    slices: int
    per_slice: int
    std_errors: dict[str, float]
    rolled_up: bool
    min_slice_size: int = DEFAULT_MIN_SLICE_SIZE


@bp.get("/plan")
def planner() -> str:
    """Compare the mechanisms for a workload: the figures of ``ldp-aggregator tasks plan``."""
    names = ("domain_size", "devices", "epsilon", "slices")
    form = PlanForm(*(request.args.get(k, "").strip() for k in names))
    plans, problem, sliced = None, None, None
    if any((form.domain_size, form.devices, form.epsilon)):
        try:
            domain_size, devices, epsilon = _plan_inputs(form)
            plans = plan(epsilon, domain_size, devices)
            sliced = _slice_plan(form.slices, domain_size, devices, epsilon)
        except ValueError as error:
            problem = str(error)
    return render_template(
        "dashboard/plan.html",
        form=form,
        plans=plans,
        problem=problem,
        z=z_value(0.95),
        sliced=sliced,
    )


def _slice_plan(text: str, domain_size: int, devices: int, epsilon: float) -> SlicePlan | None:
    """Return the plan of one slice when the reports spread over ``text`` slices."""
    if not text:
        return None
    try:
        slices = int(text)
    except ValueError:
        raise ValueError("slices must be a whole number") from None
    if not 1 <= slices <= devices:
        raise ValueError(f"slices must be between 1 and the reports ({devices:,})")
    per_slice = devices // slices
    errors = {name: p.std_error for name, p in plan(epsilon, domain_size, per_slice)}
    return SlicePlan(slices, per_slice, errors, per_slice < DEFAULT_MIN_SLICE_SIZE)


def _plan_inputs(form: PlanForm) -> tuple[int, int, float]:
    """Return the workload, checked with the CLI's bounds."""
    try:
        domain_size, devices, epsilon = (
            int(form.domain_size),
            int(form.devices),
            float(form.epsilon),
        )
    except ValueError:
        raise ValueError("domain size and devices must be whole numbers, ε a number") from None
    if domain_size < 2:
        raise ValueError("the domain size must be at least 2")
    if devices < 1:
        raise ValueError("devices must be at least 1")
    if not 0 < epsilon <= 20:
        raise ValueError("ε must be in (0, 20]")
    return domain_size, devices, epsilon


def format_cell(value: Any, kind: str) -> str:
    """Return a table cell's text: counts with separators, estimates to one decimal,
    shares and p-values to three significant digits."""
    if value is None or value == "":
        return "–"
    if kind == "count":
        return f"{int(value):,}"
    if kind == "number":
        return f"{float(value):,.1f}"
    if kind == "fraction":  # shares, their differences, p-values
        return f"{float(value):.3g}"
    return str(value)
