"""What a Playwright test expects, read with tree-sitter, and the one rule for heals: a heal
may change how a test finds things (locators and their arguments), waits and navigation;
it never changes what the test expects.

An expectation is an ``expect(subject)…matcher(args)`` chain. What it expects is its
modifiers and matcher (``not.toHaveText``) and the matcher's arguments (the expected values
and options), read canonically: quotes, spacing and comments do not count, and neither do
the waits (``timeout``, ``intervals``), which decide how long Playwright retries an assertion,
never what passes. The subject is free: it is the locator. How it is asserted counts too: an
expectation made soft, wrapped in a try/catch, put under a condition, a loop or a callback
that may never run, given a ``.catch``, or no longer awaited can no longer fail the test.

:func:`weakening` compares a test before and after a heal and says, one phrase each, every way
the heal loosens it; an empty list is an honest heal. Parsing is iterative: a test a model
wrote may nest deeply, and Python's stack is not its budget.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import tree_sitter

from agents.file_policy import TYPESCRIPT, _callee_names, walk

WAITS = frozenset({"timeout", "intervals"})
# Playwright's retrying assertions, whose last argument may be options holding a wait; other
# matchers' objects are expected values (``toEqual({timeout: 5})``) and count whole.
RETRYING = frozenset(
    """toBeAttached toBeChecked toBeDisabled toBeEditable toBeEmpty toBeEnabled toBeFocused
    toBeHidden toBeInViewport toBeVisible toContainClass toContainText toHaveAccessibleDescription
    toHaveAccessibleErrorMessage toHaveAccessibleName toHaveAttribute toHaveClass toHaveCount
    toHaveCSS toHaveId toHaveJSProperty toHaveRole toHaveScreenshot toHaveText toHaveTitle
    toHaveURL toHaveValue toHaveValues toMatchAriaSnapshot toPass""".split()
)
SKIPS = frozenset({"skip", "fixme", "fail"})
# Matchers that say little: replacing a precise one with one of these is loosening.
LOOSE = frozenset(
    """toBeTruthy toBeFalsy toBeDefined toBeUndefined toBeNull toBeVisible toBeHidden
    toBeAttached toBeOK toBeEnabled""".split()
)
_FUNCTIONS = frozenset(
    {
        "arrow_function",
        "function_expression",
        "function_declaration",
        "function",
        "method_definition",
    }
)
_LOOPS = frozenset({"for_statement", "for_in_statement", "while_statement"})
_SUBJECT_REFERS = frozenset({"identifier", "this", "member_expression", "call_expression"})
_WS = re.compile(r"\s+")
SHOWN = 140

# The rule refuses what it cannot judge: a test whose body is not an inline function.
NOT_A_TEST = "change a test whose body is not an inline function (the rule cannot read it)"
NO_EXPECTATION = "leave the test without any expectation about the app"


@dataclass(frozen=True)
class Expectation:
    text: str  # the chain as written, whitespace-normalised
    matcher: str  # modifiers and matcher: "not.toHaveText", "resolves.toBe"
    expected: str  # the matcher's arguments, canonical, waits left out
    soft: bool
    guard: str  # "" or why it may not fail the test ("inside a try/catch", …)
    awaited: bool
    trivial: bool  # its subject is a literal: it says nothing about the app

    @property
    def key(self) -> tuple[str, str]:
        return self.matcher, self.expected

    def shown(self) -> str:
        text = self.text
        return f"`{text if len(text) <= SHOWN else text[: SHOWN - 1] + '…'}`"


@dataclass(frozen=True)
class Reading:
    """One test as the rule sees it."""

    modifier: str  # test.<modifier>(…) or ""
    expectations: tuple[Expectation, ...]
    skips: int  # test.skip()/fixme()/fail() calls inside the test
    returns: int  # return statements of the test's own function


def read(statement: str) -> Reading | None:
    """The reading of one test statement (``test('…', async (…) => {…})``), None when it is
    not one."""
    root = tree_sitter.Parser(TYPESCRIPT).parse(statement.encode("utf-8")).root_node
    call = next((n for n in walk(root) if n.type == "call_expression"), None)
    if call is None:
        return None
    names = _callee_names(call.child_by_field_name("function"))
    args = call.child_by_field_name("arguments")
    named = args.named_children if args is not None else []
    fn = named[-1] if named else None
    if names[:1] != ["test"] or fn is None or fn.type not in _FUNCTIONS:
        return None
    expectations, skips, returns = [], 0, 0
    values = _values(fn)
    for node in walk(fn):
        if node.type == "call_expression":
            found = _expectation(node, fn, values)
            if found is not None:
                expectations.append(found)
            skips += _is_skip(node)
        elif node.type == "return_statement" and _scope(node) == fn:
            returns += 1
    modifier = names[1] if len(names) == 2 else ""
    return Reading(modifier, tuple(expectations), skips, returns)


def weakening(before: str, after: str) -> list[str]:
    """Every way the test ``after`` loosens the test ``before`` (each a phrase completing "the
    heal tried to …"); empty for an honest heal."""
    old, new = read(before), read(after)
    if old is None or new is None:
        return [NOT_A_TEST]
    found = []
    if new.modifier in SKIPS and old.modifier != new.modifier:
        found.append(f"mark the test test.{new.modifier}")
    if new.skips > old.skips:
        found.append("call test.skip/fixme/fail inside the test")
    if new.returns > old.returns:
        found.append("add a return that can end the test before its expectations")
    olds = [e for e in old.expectations if not e.trivial]
    news = [e for e in new.expectations if not e.trivial]
    if olds and not news:
        found.append(NO_EXPECTATION)
    return found + _compare(olds, news)


def _compare(olds: list[Expectation], news: list[Expectation]) -> list[str]:
    """Each old expectation must be kept as strictly by one new one; extra ones are welcome."""
    unused = list(news)
    missing = []
    for old in olds:
        same = next((n for n in unused if n.key == old.key and not _looser(old, n)), None)
        if same is None:
            missing.append(old)
        else:
            unused.remove(same)
    return [_describe(old, unused) for old in missing]


def _looser(old: Expectation, new: Expectation) -> str:
    if new.soft and not old.soft:
        return "make {old} soft"
    if new.guard and new.guard != old.guard:
        return f"put {{old}} {new.guard}"
    if old.awaited and not new.awaited:
        return "stop awaiting {old}"
    return ""


def _describe(old: Expectation, unused: list[Expectation]) -> str:
    """What became of ``old``, told with the closest remaining new expectation."""
    same = next((n for n in unused if n.key == old.key), None)
    if same is not None:
        unused.remove(same)
        return _looser(old, same).format(old=old.shown())
    base = old.matcher.split(".")[-1]
    by_matcher = next((n for n in unused if n.matcher.split(".")[-1] == base), None)
    if by_matcher is not None:
        unused.remove(by_matcher)
        if by_matcher.matcher != old.matcher:
            return f"change the .not/.resolves/.rejects of {old.shown()}: {by_matcher.shown()}"
        return f"change the expected value of {old.shown()}: {by_matcher.shown()}"
    if unused:
        other = unused.pop(0)
        verb = "loosen" if other.matcher.split(".")[-1] in LOOSE and base not in LOOSE else "change"
        return f"{verb} {old.shown()} to {other.shown()}"
    return f"remove {old.shown()}"


def _values(fn: tree_sitter.Node) -> dict[str, str]:
    """What each variable declared in the test holds, canonical: an expected value may be
    named (``toHaveText(title)``), and a heal changing ``title`` changes what is expected."""
    values = {}
    for node in walk(fn):
        if node.type == "variable_declarator":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and name.type == "identifier" and value is not None:
                values[name.text.decode("utf-8")] = _tokens(value, {})
    return values


def _expectation(
    call: tree_sitter.Node, fn: tree_sitter.Node, values: dict[str, str]
) -> Expectation | None:
    """The expectation whose ``expect(…)`` call is ``call``, else None."""
    function = call.child_by_field_name("function")
    soft = False
    if function is not None and function.type == "call_expression":  # expect.configure({…})(x)
        soft = b"soft" in function.text
        function = function.child_by_field_name("function")
    names = _callee_names(function)
    if names[:1] != ["expect"] or not set(names[1:]) <= {"soft", "poll", "configure"}:
        return None
    if (
        names[1:2] == ["configure"]
        and call.child_by_field_name("function").type != "call_expression"
    ):
        return None
    args = call.child_by_field_name("arguments")
    subject = args.named_children[0] if args is not None and args.named_children else None
    modifiers, node, matcher_call = [], call, None
    while (parent := node.parent) is not None and parent.type == "member_expression":
        name = parent.child_by_field_name("property").text.decode()
        outer = parent.parent
        if (
            outer is not None
            and outer.type == "call_expression"
            and outer.child_by_field_name("function") == parent
        ):
            matcher_call = outer
            modifiers.append(name)
            break
        modifiers.append(name)
        node = parent
    if matcher_call is None:
        return None  # `expect(x).not` alone asserts nothing
    return Expectation(
        text=_WS.sub(" ", matcher_call.text.decode("utf-8")),
        matcher=".".join(modifiers),
        expected=_canonical_args(
            matcher_call.child_by_field_name("arguments"),
            options=modifiers[-1] in RETRYING,
            values=values,
        ),
        soft=soft or "soft" in names,
        guard=_guard(matcher_call, fn),
        awaited=_awaited(matcher_call),
        trivial=subject is None or not any(n.type in _SUBJECT_REFERS for n in walk(subject)),
    )


def _canonical_args(args: tree_sitter.Node | None, *, options: bool, values: dict[str, str]) -> str:
    """The matcher's arguments as one canonical string: string literals by their value, a
    variable of the test with what it holds, other tokens as written, comments and whitespace
    dropped; with ``options``, the waits are left out of a last object argument (and an object
    of waits only, out altogether)."""
    named = [a for a in args.named_children if a.type != "comment"] if args is not None else []
    parts = [_tokens(arg, values) for arg in named]
    if options and named and named[-1].type == "object":
        pairs = [p for p in named[-1].named_children if p.type != "comment"]
        kept = [p for p in pairs if not (p.type == "pair" and _key(p) in WAITS)]
        parts[-1] = "{" + ",".join(_tokens(p, values) for p in kept) + "}"
        if pairs and not kept:
            parts.pop()
    return ",".join(parts)


def _key(pair: tree_sitter.Node) -> str:
    key = pair.child_by_field_name("key")
    text = key.text.decode("utf-8") if key is not None else ""
    return text.strip("'\"")


def _tokens(node: tree_sitter.Node, values: dict[str, str]) -> str:
    out = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "comment":
            continue
        if current.type in ("string", "template_string") and not any(
            c.type == "template_substitution" for c in current.children
        ):
            out.append(json.dumps(_literal(current)))
        elif current.type == "identifier" and current.text.decode("utf-8") in values:
            name = current.text.decode("utf-8")
            out.append(f"{name}=({values[name]})")
        elif current.child_count == 0:
            out.append(current.text.decode("utf-8"))
        else:
            stack.extend(reversed(current.children))
    return " ".join(out)


def _literal(node: tree_sitter.Node) -> str:
    raw = node.text.decode("utf-8")[1:-1]
    if node.type == "string":
        try:
            return json.loads(
                '"' + raw.replace('\\"', '"').replace('"', '\\"').replace("\\'", "'") + '"'
            )
        except ValueError:
            return raw
    return raw


def _guard(node: tree_sitter.Node, fn: tree_sitter.Node) -> str:
    """Why the assertion at ``node`` may not fail the test ("" when nothing in its way)."""
    child, parent = node, node.parent
    if parent is not None and parent.type == "member_expression":
        if parent.child_by_field_name("property").text in (b"catch", b"then"):
            return "behind a .catch/.then that swallows its failure"
    while parent is not None and child != fn:
        kind = parent.type
        if kind == "try_statement" and child == parent.child_by_field_name("body"):
            if parent.child_by_field_name("handler") is not None:
                return "inside a try/catch"
        elif kind == "catch_clause":
            return "inside a catch block"
        elif kind in ("if_statement", "switch_case", "else_clause") and child != (
            parent.child_by_field_name("condition") or parent.child_by_field_name("value")
        ):
            return "under a condition"
        elif kind == "ternary_expression" and child != parent.child_by_field_name("condition"):
            return "under a condition"
        elif kind == "binary_expression" and child == parent.child_by_field_name("right"):
            if parent.child_by_field_name("operator").type in ("&&", "||", "??"):
                return "under a condition"
        elif kind in _LOOPS and child == parent.child_by_field_name("body"):
            return "inside a loop that may not run"
        elif kind in _FUNCTIONS and parent != fn and not _runs_for_sure(parent):
            return "inside a callback that may never run"
        child, parent = parent, parent.parent
    return ""


def _runs_for_sure(function: tree_sitter.Node) -> bool:
    """A ``test.step`` body, or the block ``expect(…).toPass()``/``expect.poll`` retries."""
    args = function.parent
    call = args.parent if args is not None and args.type == "arguments" else None
    if call is None or call.type != "call_expression":
        return False
    names = _callee_names(call.child_by_field_name("function"))
    return names == ["test", "step"] or names[:1] == ["expect"]


def _awaited(node: tree_sitter.Node) -> bool:
    """Whether the assertion's promise is awaited or returned (up to its statement)."""
    current = node.parent
    while current is not None and not current.type.endswith(("statement", "declaration")):
        if current.type == "await_expression":
            return True
        if current.type in _FUNCTIONS:
            return False
        current = current.parent
    return current is not None and current.type == "return_statement"


def _is_skip(call: tree_sitter.Node) -> bool:
    function = call.child_by_field_name("function")
    if function is None or function.type != "member_expression":
        return False
    name = function.child_by_field_name("property").text.decode()
    owner = function.child_by_field_name("object").text.decode()
    return name in SKIPS and re.match(r"(test|testInfo)\b", owner) is not None


def _scope(node: tree_sitter.Node) -> tree_sitter.Node | None:
    current = node.parent
    while current is not None and current.type not in _FUNCTIONS:
        current = current.parent
    return current
