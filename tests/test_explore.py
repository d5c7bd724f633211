"""ExploreApp: the sandboxed browser visits a live app on loopback within its bounds, and
everything it brings back is checked, scrubbed and capped before it is stored."""

import json

import pytest

import schemas
from agents.offline.flows import flow_candidates
from runs.demo.app import serving
from tests.exploring import bounds, explore_loopback
from tests.test_browser import chromium_path
from verification.errors import TargetUnreachable
from verification.exploration.explore import _page, capped
from verification.exploration.service import exploration_note
from verification.exploration.trials import trial

CANARY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape


def _html(title: str, body: str) -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


PAGES = {
    "/": (
        "Shop",
        '<h1>Shop</h1><nav><a href="/products">Products</a> <a href="/login#top">Sign in</a>'
        ' <a href="https://example.com/elsewhere">Elsewhere</a> <a href="/manual.pdf">PDF</a>'
        ' <a href="mailto:a@b.c">Mail</a></nav>',
    ),
    "/products": (
        "Products",
        '<h1>Products</h1><ul><li><a href="/products/1">Lamp</a></li></ul>'
        f"<p>debug: {CANARY}</p>"
        "<script>console.error('chart failed'); fetch('http://169.254.169.254/latest/meta-data/')"
        ".catch(() => {});</script>",
    ),
    # A relative link: it resolves against the page's URL, /products/1 → /products/1/reviews.
    "/products/1": ("Lamp", '<h1>Lamp</h1><a href="1/reviews">Reviews</a>'),
    "/products/1/reviews": ("Reviews", '<h1>Reviews</h1><a href="/deeper">Deeper</a>'),
    "/login": (
        "Sign in",
        '<h1>Sign in</h1><form method="post" action="/session"><label for="e">Email</label>'
        '<input id="e" name="email" type="email" required><label>Password '
        '<input name="password" type="password"></label><input type="hidden" name="csrf">'
        "<button>Sign in</button></form>",
    ),
}


def shop(environ, start_response):
    page = PAGES.get(environ["PATH_INFO"])
    if page is None:
        start_response("404 Not Found", [("Content-Type", "text/html")])
        return [_html("Not found", "<h1>Not found</h1>")]
    start_response("200 OK", [("Content-Type", "text/html")])
    return [_html(*page)]


@pytest.fixture(scope="module")
def app_url():
    chromium_path()
    with serving(shop) as url:
        yield url


def test_the_app_is_mapped_within_the_origin_and_checked(app_url, tmp_path):
    app_map = schemas.validate("exploration/app_map", explore_loopback(app_url, tmp_path))
    pages = {page["path"]: page for page in app_map["pages"]}
    # Breadth-first from /, same-origin only, fragments dropped, files and mailto skipped.
    assert list(pages) == ["/", "/products", "/login", "/products/1", "/products/1/reviews"]
    assert pages["/"]["links"] == ["/products", "/login"]
    assert pages["/products/1/reviews"]["depth"] == 3  # /deeper would be depth 4: not visited
    assert app_map["unvisited"] == 0 and app_map["stopped"] == ""
    assert pages["/"]["status"] == 200 and pages["/"]["title"] == "Shop"
    assert '- heading "Shop" [level=1]' in pages["/"]["snapshot"]
    (form,) = pages["/login"]["forms"]
    assert form["method"] == "post" and form["submit"] == "Sign in"
    assert [(f["label"], f["name"], f["type"], f["required"]) for f in form["fields"]] == [
        ("Email", "email", "email", True),
        ("Password", "password", "password", False),
    ]
    assert any("chart failed" in e for e in pages["/products"]["console_errors"])
    # The page's secret is scrubbed, its request for a metadata address refused and listed.
    assert CANARY not in json.dumps(app_map)
    assert app_map["sandbox"] == {"isolated": True, "blocked": ["169.254.169.254:80"]}
    shot = tmp_path / pages["/"]["screenshot"]
    assert shot.read_bytes().startswith(b"\xff\xd8\xff") and shot.stat().st_size < 512 << 10
    assert exploration_note(app_map) == "5 page(s), 1 form(s)"


def test_the_page_bound_stops_exploration_and_says_what_was_left(app_url, tmp_path):
    app_map = explore_loopback(app_url, tmp_path, bounds=bounds(max_pages=2))
    assert [page["path"] for page in app_map["pages"]] == ["/", "/products"]
    assert app_map["stopped"] == "stopped at 2 pages" and app_map["unvisited"] == 2
    assert exploration_note(app_map) == (
        "2 page(s), 0 form(s); stopped at 2 pages, 2 link(s) not visited"
    )


def test_an_unreachable_app_is_a_typed_error(tmp_path):
    with pytest.raises(TargetUnreachable, match="did not answer"):
        explore_loopback("http://127.0.0.1:9", tmp_path)


def test_hostile_page_records_are_bounded_field_by_field(tmp_path):
    work = tmp_path / "work"
    (work / "shots").mkdir(parents=True)
    (work / "shots" / "0.jpeg").write_bytes(b"<svg onload=alert(1)>")  # not a JPEG
    (work / "shots" / "1.jpeg").symlink_to("/etc/passwd")
    raw = {
        "path": "javascript:alert(1)",
        "depth": "1",
        "status": 999,
        "title": "x" * 10_000,
        "snapshot": ["not", "text"],
        "links": ["/ok", "//evil.example/x", "/\\evil.example", "/with space", 7],
        "forms": [{"method": "DELETE", "fields": [{"type": "", "required": "yes"}, 3]}],
        "console_errors": "not a list",
        "screenshot": "../../../etc/passwd",
    }
    page = _page(raw, work, tmp_path / "kept")
    assert (page["path"], page["depth"], page["status"]) == ("/", 0, 0)
    assert len(page["title"]) == 300 and page["snapshot"] == ""
    assert page["links"] == ["/ok"]
    assert page["forms"][0]["method"] == "get"
    assert page["forms"][0]["fields"][0] == {
        "label": "",
        "name": "",
        "type": "text",
        "required": False,
    }
    assert page["console_errors"] == [] and page["screenshot"] == ""
    for name in ("shots/0.jpeg", "shots/1.jpeg"):
        assert _page({**raw, "screenshot": name}, work, tmp_path / "kept")["screenshot"] == ""
    assert not (tmp_path / "kept").exists()


def test_the_map_is_capped_snapshots_first_then_pages():
    page = {"path": "/", "snapshot": "- text: " + "word " * 2000, "forms": []}
    content = {"pages": [dict(page, path=f"/{i}") for i in range(40)], "truncated": False}
    capped_map = capped(content, 64 << 10)
    assert len(json.dumps(capped_map).encode()) <= 64 << 10
    assert capped_map["truncated"] and len(capped_map["pages"]) == 40
    tiny = capped(
        {"pages": [dict(page, path=f"/{i}") for i in range(40)], "truncated": False}, 2000
    )
    assert len(json.dumps(tiny).encode()) <= 2000 and 0 < len(tiny["pages"]) < 40


LONG = "x" * 300
GUESTBOOK = (
    '<h1>Guestbook</h1><ul>{entries}</ul>{said}<form method="post" action="/sign">'
    '<label for="n">Your name</label><input id="n" name="name" required>'
    '<label for="c">Colour</label><select id="c" name="colour"><option value="">Pick</option>'
    '<option value="r">Red</option></select>'
    '<label><input type="checkbox" name="ok" required> I agree</label>'
    "<button>Sign the book</button></form>"
    '<form method="post" action="https://example.com/collect"><label for="e">Email</label>'
    '<input id="e" type="email" name="email"><button>Subscribe</button></form>'
    '<form method="post" action="/entries/1"><button>Delete entry</button></form>'
    # Radio buttons only, as Django's polls: a trial picks the group's first choice.
    '<form method="post" action="/vote"><fieldset><legend>Favourite colour?</legend>'
    '<input type="radio" name="choice" id="v1" value="1"><label for="v1">Blue</label>'
    '<input type="radio" name="choice" id="v2" value="2"><label for="v2">Green</label>'
    '</fieldset><input type="submit" value="Vote"></form>'
    # A bulk action as Django admin's: only the chosen option reads as destructive.
    '<form method="post" action="/entries"><label for="a">Action:</label>'
    '<select id="a" name="action" required><option value="">---------</option>'
    '<option value="delete_selected">Delete selected entries</option></select>'
    "<button>Go</button></form>"
)


class Guestbook:
    """A form app whose answers are hostile text: ``${}``, quotes, an overlong alert."""

    def __init__(self):
        self.posts: list[tuple[str, str]] = []

    def __call__(self, environ, start_response):
        path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            self.posts.append((path, environ["wsgi.input"].read(size).decode()))
            start_response("303 See Other", [("Location", "/")])
            return [b""]
        signed = [p for path, p in self.posts if path == "/sign"]
        names = [p.split("name=")[1].split("&")[0].replace("+", " ") for p in signed]
        entries = "".join(f"<li>{n}</li>" for n in names)
        said = ""
        if names:
            said = f'<p role="status">Signed ${{x}} "by" {names[-1]}</p>'
            said += f'<p role="alert">{LONG}</p><h2>Thanks for signing</h2>'
        if any(path == "/vote" for path, _ in self.posts):
            said += "<p>Your vote was counted</p>"
        body = GUESTBOOK.format(entries=entries, said=said)
        start_response("200 OK", [("Content-Type", "text/html")])
        return [_html("Guestbook", body)]


def test_forms_are_tried_once_by_label_never_elsewhere_or_destructively(tmp_path):
    chromium_path()
    book = Guestbook()
    with serving(book) as url:
        app_map = explore_loopback(url, tmp_path, bounds=bounds(form_trials=5), tag="hostile01")
    app_map = schemas.validate("exploration/app_map", app_map)
    # The guestbook's own forms: the other origin's and the destructive ones never, not even
    # the bulk action whose only choice deletes.
    assert [path for path, _ in book.posts] == ["/sign", "/vote"]
    assert "name=AMTP+hostile01" in book.posts[0][1] and "colour=r" in book.posts[0][1]
    assert book.posts[1][1] == "choice=1"  # the radio group's first choice
    assert all("example.com" not in host for host in app_map["sandbox"]["blocked"])
    trial, vote = app_map["trials"]
    assert [(f["label"], f["type"], f["option"]) for f in trial["filled"]] == [
        ("Your name", "text", ""),
        ("Colour", "select", "Red"),
        ("I agree", "check", ""),
    ]
    assert (trial["path_after"], trial["status"], trial["shows_value"]) == ("/", 200, True)
    appeared = {(a["role"], a["text"]) for a in trial["appeared"]}
    assert ("listitem", "AMTP {tag}") in appeared and ("heading", "Thanks for signing") in appeared
    assert ("status", 'Signed ${x} "by" AMTP {tag}') in appeared  # data, kept as it was
    assert not any(LONG in text for _, text in appeared)  # an overlong text is dropped whole
    assert vote["filled"] == [{"label": "Blue", "type": "check", "option": ""}]
    (flow,) = [f for f in flow_candidates(app_map, "running") if f.key == "flow_home_vote"]
    assert flow.steps == ["Open /", 'Check "Blue"', 'Click the button "Vote"']
    assert 'the text "Your vote was counted" is visible' in flow.expected
    assert exploration_note(app_map) == "1 page(s), 5 form(s), 2 tried"


def test_hostile_trial_records_are_checked_against_the_map(tmp_path):
    form = {"action": "/notes", "method": "post", "submit": "Add", "fields": []}
    form["fields"] = [{"label": "Title", "name": "t", "type": "text", "required": True}]
    pages = {"/notes": {"forms": [form, {**form, "submit": "Delete all"}]}}
    after = "\n".join(
        [
            '- heading "Notes" [level=1]',
            "- status: Saved `AMTP tag123456` ${process.exit(1)}",
            '- listitem: "AMTP tag123456: \\"quoted\\""',
            "- paragraph: literal {tag} from the app",
            f"- text: {'y' * 500}",
            '- textbox "Title": AMTP tag123456',
        ]
        + [f"- listitem: item {i}" for i in range(30)]
    )
    raw = {
        "path": "/notes",
        "form": 0,
        "filled": [{"label": "Title", "type": "text"}, {"label": "Other", "type": "text"}, 7],
        "path_after": "//evil.example/x",
        "status": 9999,
        "before": '- heading "Notes" [level=1]',
        "after": after,
    }
    found = trial(raw, "tag123456", pages)
    assert found["filled"] == [{"label": "Title", "type": "text", "option": ""}]
    assert (found["path_after"], found["status"], found["shows_value"]) == ("", 0, True)
    assert found["appeared"][:2] == [
        {"role": "status", "text": "Saved `AMTP {tag}` ${process.exit(1)}"},
        {"role": "listitem", "text": 'AMTP {tag}: "quoted"'},
    ]
    assert len(found["appeared"]) == 10 and not any(
        "{tag} from" in a["text"] for a in found["appeared"]
    )
    assert trial({**raw, "form": 1}, "tag123456", pages) is None  # "Delete all": never tried
    assert trial({**raw, "form": 2}, "tag123456", pages) is None
    # A select's chosen option that deletes ("Delete selected users") is never a trial.
    bulk = [{"label": "Title", "type": "select", "option": "Delete selected users"}]
    assert trial({**raw, "filled": bulk}, "tag123456", pages) is None
    assert trial({**raw, "path": "/elsewhere"}, "tag123456", pages) is None
    failed = trial({**raw, "error": "no single button"}, "tag123456", pages)
    assert (failed["filled"], failed["appeared"], failed["shows_value"]) == ([], [], False)
    # The value shown only inside its own field is not the created item shown.
    assert not trial({**raw, "after": '- textbox "Title": AMTP tag123456'}, "tag123456", pages)[
        "shows_value"
    ]
