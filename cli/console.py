"""The review console: the static pages in `console/`, served at `/` by the local host and
by Firebase Hosting (its public folder), with the same security headers from both.

The Content-Security-Policy admits scripts, styles and API calls from the console's own
origin only, with no inline code and no eval: model and user text can never run there."""

from __future__ import annotations

from pathlib import Path

import flask

CONSOLE = Path(__file__).resolve().parent.parent / "console"
ASSETS = CONSOLE / "assets"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def hosting_headers() -> list[dict[str, object]]:
    """The same headers, in Firebase Hosting's `headers` form, for every console file."""
    return [
        {
            "source": "**",
            "headers": [{"key": name, "value": value} for name, value in HEADERS.items()],
        }
    ]


def _with_headers(response: flask.Response) -> flask.Response:
    response.headers.update(HEADERS)
    return response


def _index() -> flask.Response:
    return _with_headers(flask.send_file(CONSOLE / "index.html", mimetype="text/html"))


def _asset(name: str) -> flask.Response:
    return _with_headers(flask.send_from_directory(ASSETS, name))


def add_routes(app: flask.Flask) -> None:
    for rule, endpoint, view in (
        ("/", "console", _index),
        ("/index.html", "console_index", _index),
        ("/assets/<path:name>", "console_asset", _asset),
    ):
        app.add_url_rule(
            rule,
            endpoint=endpoint,
            view_func=view,
            methods=["GET"],
            provide_automatic_options=False,
        )
