"""A standalone HTML page around a rendered fragment: ``stats table --format html`` and ``stats leaderboard
--format html`` print one file that opens styled in a browser, offline (inline CSS, no scripts, no fonts)."""

from __future__ import annotations

from html import escape

__all__ = ["standalone_page"]

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.3em; } h3 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: .8em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .3em .65em; text-align: left; }
th { background: #f6f8fa; }
tr:nth-child(even) td { background: #fbfcfd; }
code { background: #f6f8fa; padding: 0 .25em; border-radius: 3px; }
ul { color: #444; }
""".strip()


def standalone_page(title: str, body: str) -> str:
    """``body`` (already escaped HTML) in a complete UTF-8 page titled ``title`` (escaped here)."""
    t = escape(title)
    return (
        f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{t}</title>\n'
        f"<style>\n{_STYLE}\n</style>\n</head>\n<body>\n<h1>{t}</h1>\n{body}\n</body>\n</html>"
    )
