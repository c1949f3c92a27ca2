"""``expkit ui``'s web app: a read-only Starlette app over one run store, an eval folder and a labs report.

Safe by default:

- GET and HEAD only; any other method is answered 405 before a route is looked at.
- Files are served from two fixed lists, never from a path in the URL: the package's assets (``ASSETS``,
  by exact name) and the figures a labs report's ``results.json`` names. Run references go through the
  store's own name check (``validate_name``: no ``/``, no ``..``), whatever the URL's encoding.
- Every value from a run (names, configs, metric names, logs) reaches the page through Jinja2 with
  autoescaping on, or as JSON that the page's script puts in ``textContent``, never ``innerHTML``.
- The server binds 127.0.0.1 unless the command is told otherwise (see ``cli/ui.py``).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from expkit.errors import ExpkitError, UsageError
from expkit.ui.evals import EvalSources, eval_page
from expkit.ui.labs import labs_page
from expkit.ui.series import SeriesCache
from expkit.ui.views import ListingCache, RunsQuery, run_dir_status, run_page, runs_page, sweep_page, sweeps_of

__all__ = ["ASSETS", "UiConfig", "create_app"]

_ASSET_DIR = Path(__file__).parent / "assets"
# name in the URL -> (file in the package, media type); nothing else is ever served from the package
ASSETS: dict[str, tuple[str, str]] = {
    "uPlot.iife.min.js": ("uPlot.iife.min.js", "text/javascript"),
    "uPlot.min.css": ("uPlot.min.css", "text/css"),
    "ui.js": ("ui.js", "text/javascript"),
    "ui.css": ("ui.css", "text/css"),
}
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
CHART_BUCKETS = 1000  # min-max buckets of a curve: 2,000 points at most, about two per pixel column


@dataclasses.dataclass(frozen=True)
class UiConfig:
    """What the app serves: the run ``store``, eval result files (``evals``) and a labs ``report`` folder."""

    store: Path
    evals: EvalSources = dataclasses.field(default_factory=EvalSources)
    report: Path | None = None


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def _json(obj: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(_jsonable(obj)), status_code=status, media_type="application/json")


class _App:
    """The routes, holding the config, the template environment and the curve cache."""

    def __init__(self, config: UiConfig) -> None:
        self.config = config
        self.series = SeriesCache()
        self.listings = ListingCache()
        self.env = Environment(
            loader=PackageLoader("expkit.ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self.env.filters["num"] = _format_number
        # JSON shown as text in a <pre>: autoescaped like any string (tojson is for <script> data blocks)
        self.env.filters["pretty_json"] = lambda v: orjson.dumps(
            _jsonable(v), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
        ).decode()

    def page(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        nav = {"evals": self.config.evals.present(), "labs": self.config.report is not None}
        html = self.env.get_template(template).render(nav=nav, store=str(self.config.store), **values)
        return HTMLResponse(html, status_code=status)

    # --- pages -------------------------------------------------------------------------------------------
    async def runs(self, request: Request) -> Response:
        return self.page("runs.html", query=_runs_query(request))

    async def run(self, request: Request) -> Response:
        view = run_page(self.config.store, request.path_params["ref"])
        metrics = self.series.metrics_of(Path(view.run_dir))
        return self.page("run.html", run=view, metrics=metrics)

    async def compare(self, request: Request) -> Response:
        from expkit.sweep.compare import compare_groups

        q = request.query_params
        a, b, by = q.get("a") or "", q.get("b") or None, q.get("by") or None
        if not a:
            return self.page("compare.html", cmp=None, a=a, b=b, by=by)
        cmp = compare_groups(a, b, by=by, store=self.config.store, level=_level(q.get("level")))
        return self.page("compare.html", cmp=cmp, a=a, b=b, by=by, cmp_json=_jsonable(cmp))

    async def sweeps(self, request: Request) -> Response:
        return self.page("sweeps.html", sweeps=sweeps_of(self.config.store))

    async def sweep(self, request: Request) -> Response:
        view = sweep_page(self.config.store, request.path_params["group"])
        return self.page("sweep.html", sweep=view)

    async def evals(self, request: Request) -> Response:
        q = request.query_params
        view = eval_page(self.config.evals, a=q.get("a"), b=q.get("b"), offset=_int(q.get("offset"), 0, "offset"))
        return self.page("evals.html", ev=view)

    async def labs(self, request: Request) -> Response:
        if self.config.report is None:
            raise UsageError("no labs report given", hint="start with `expkit ui --report report`")
        return self.page("labs.html", report=labs_page(self.config.report))

    # --- data the pages poll -------------------------------------------------------------------------------
    async def api_runs(self, request: Request) -> Response:
        return _json(runs_page(self.config.store, _runs_query(request), cache=self.listings))

    async def api_series(self, request: Request) -> Response:
        run_dir, status = run_dir_status(self.config.store, request.path_params["ref"])
        metric = request.query_params.get("metric") or ""
        buckets = _int(request.query_params.get("buckets"), CHART_BUCKETS, "buckets")
        if not 1 <= buckets <= 10 * CHART_BUCKETS:
            raise UsageError(f"buckets {buckets} out of range", hint=f"use 1 to {10 * CHART_BUCKETS}")
        s = self.series.series(run_dir, metric, buckets=buckets)
        return _json({**dataclasses.asdict(s), "status": status})

    async def api_compare_curves(self, request: Request) -> Response:
        from expkit.sweep.compare import compare_groups, curve_set_of

        q = request.query_params
        cmp = compare_groups(q.get("a") or "", q.get("b") or None, by=q.get("by") or None, store=self.config.store)
        metric = q.get("metric") or (cmp.metrics[0].metric if cmp.metrics else "")
        cs = curve_set_of(cmp, metric=metric, level=_level(q.get("level")))
        bands = [
            {
                "group": band.group,
                "n_seeds": band.n_seeds,
                "x": band.x.tolist(),
                "mean": band.mean.tolist(),
                "low": None if band.low is None else band.low.tolist(),
                "high": None if band.high is None else band.high.tolist(),
            }
            for band in cs.bands
        ]
        return _json({"metric": metric, "bands": bands, "notes": list(cs.notes)})

    async def asset(self, request: Request) -> Response:
        entry = ASSETS.get(request.path_params["name"])
        if entry is None:
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(_ASSET_DIR / entry[0], media_type=entry[1])

    async def figure(self, request: Request) -> Response:
        if self.config.report is None:
            return PlainTextResponse("not found", status_code=404)
        path = labs_page(self.config.report).figure_path(request.path_params["name"])
        if path is None:
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(path)


def _format_number(value: Any) -> str:
    """A number for a table cell: floats to 6 significant digits (never cut mid-digit), the rest as text."""
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _int(text: str | None, default: int, what: str) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{what} {text!r} is not an integer") from None


def _level(text: str | None) -> float:
    if not text:
        return 0.95
    try:
        level = float(text)
    except ValueError:
        raise UsageError(f"level {text!r} is not a number") from None
    if not 0.5 <= level < 1:
        raise UsageError(f"level {text!r} out of range", hint="use a level in [0.5, 1), as 0.95")
    return level


def _runs_query(request: Request) -> RunsQuery:
    q = request.query_params
    return RunsQuery(
        where=tuple(q.getlist("where")),
        text=q.get("q") or "",
        sort=q.get("sort") or "created",
        descending=(q.get("desc") or "1") != "0",
        offset=_int(q.get("offset"), 0, "offset"),
        limit=_int(q.get("limit"), 50, "limit"),
    )


Handler = Callable[[Request], Awaitable[Response]]


def _guarded(app: _App, handler: Handler) -> Handler:
    """Our errors become a page (or JSON for /api) with 400/404; anything else is left to Starlette's 500."""

    async def run(request: Request) -> Response:
        try:
            response = await handler(request)
        except ExpkitError as exc:
            status = 404 if "no run" in str(exc) or "no sweep" in str(exc) else 400
            if request.url.path.startswith("/api/"):
                return _json({"error": str(exc), "hint": getattr(exc, "hint", None)}, status=status)
            response = app.page("error.html", status=status, error=exc)
        response.headers.update(_SECURITY_HEADERS)
        return response

    return run


class _GetOnly:
    """ASGI middleware: any method but GET and HEAD gets 405 with ``Allow: GET, HEAD``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            response = PlainTextResponse("method not allowed: this view is read-only", status_code=405)
            response.headers["Allow"] = "GET, HEAD"
            await response(scope, receive, send)
            return
        await self.inner(scope, receive, send)


def create_app(config: UiConfig, *, warm: bool = True) -> Any:
    """The ASGI app serving ``config``'s store (read-only; see the module's note on safety). ``warm``: list the
    store once in a background thread now, so the first runs page does not wait for a 10,000-run listing."""
    app = _App(config)
    if warm and config.store.is_dir():
        threading.Thread(target=app.listings.listed, args=(config.store, ()), daemon=True).start()

    async def home(request: Request) -> Response:
        return RedirectResponse("/runs")

    routes = [
        ("/", home),
        ("/runs", app.runs),
        ("/run/{ref}", app.run),
        ("/compare", app.compare),
        ("/sweeps", app.sweeps),
        ("/sweep/{group}", app.sweep),
        ("/evals", app.evals),
        ("/labs", app.labs),
        ("/api/runs", app.api_runs),
        ("/api/run/{ref}/series", app.api_series),
        ("/api/compare/curves", app.api_compare_curves),
        ("/assets/{name}", app.asset),
        ("/labs/figure/{name}", app.figure),
    ]
    star = Starlette(routes=[Route(path, _guarded(app, h), methods=["GET", "HEAD"]) for path, h in routes])
    return _GetOnly(star)
