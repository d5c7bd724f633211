"""TodoMVC (JavaScript ES5) served as its authors ship it: static files only, no back end.

The files under tests/fixtures/realworld/todomvc-es5/dist are copied unchanged from
tastejs/todomvc (MIT, see the LICENSE and README.md beside dist/): a real single-page app whose input is in no <form>
(type, press Enter), whose item controls exist only once an item does, and whose filters are
hash routes (#/active). Its store is in memory: a reload starts empty.
"""

from __future__ import annotations

import re
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "realworld" / "todomvc-es5" / "dist"
_FILE = re.compile(r"^/([a-z]+\.(?:js|css|html))$")
TYPES = {"js": "text/javascript", "css": "text/css", "html": "text/html; charset=utf-8"}


def todomvc(environ, start_response):
    """The fixture's files; / is index.html, anything else a 404."""
    path = environ.get("PATH_INFO", "/")
    match = _FILE.match("/index.html" if path == "/" else path)
    file = FIXTURE / match.group(1) if match else None
    if file is None or not file.is_file():
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    start_response("200 OK", [("Content-Type", TYPES[file.suffix[1:]])])
    return [file.read_bytes()]
