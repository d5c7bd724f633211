"""No product app reaches into another app's private names (issue 43: "No module under the
product apps imports another app's private module"). `lint-imports` checks the direction of
imports; this checks what they take: a leading underscore marks a module or a name as the
owning app's own, so another app must not import it or read it as an attribute."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = (
    "access agents amtp_site approvals notifications reporting repositories runs schemas "
    "triggers verification"
).split()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reaches(source: str, own_app: str) -> list[str]:
    """`line: what` for each private module or name of another app that `source` uses."""
    tree = ast.parse(source)
    found, aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] not in APPS or parts[0] == own_app:
                continue
            for alias in node.names:
                if any(map(_private, parts)) or _private(alias.name):
                    found.append(f"{node.lineno}: {node.module}.{alias.name}")
                aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in APPS and parts[0] != own_app:
                    if any(map(_private, parts)):
                        found.append(f"{node.lineno}: {alias.name}")
                    aliases.add(alias.asname or parts[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_check_finds_each_kind_of_reach():
    source = (
        "from runs.slots import _take\n"
        "from runs._internal import helper\n"
        "import runs._internal as internal\n"
        "from runs import services\n"
        "services._end()\n"
        "from access.auth import grant\n"  # public: fine
        "from verification.box import _own\n"  # the same app: fine
    )
    assert private_reaches(source, "verification") == [
        "1: runs.slots._take",
        "2: runs._internal.helper",
        "3: runs._internal",
        "5: services._end",
    ]


def test_no_app_uses_another_apps_private_names():
    reaches = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for reach in private_reaches(path.read_text(), app):
                reaches.append(f"{path.relative_to(ROOT)}:{reach}")
    assert reaches == []
