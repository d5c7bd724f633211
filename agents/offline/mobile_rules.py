"""Mobile rules: Expo / React Native (expo-router, React Navigation), Android, iOS."""

from __future__ import annotations

import json
import posixpath
import re

from .common import Findings, balanced, clean_route, title_words, ui_text
from .node_rules import package_manifests, resolve_module

_APP_ID = re.compile(r"^[A-Za-z][\w]*(\.[A-Za-z0-9_]+)+$")
_RN_EXT = (".tsx", ".ts", ".jsx", ".js")
_TITLE_OPTION = re.compile(r"\btitle\s*:\s*(['\"])([^'\"\n]+)\1")
_RN_TEXT = re.compile(r"<Text\b[^>]*>\s*([^<{]+?)\s*</Text>")
_SWIFT_VIEW = re.compile(r"\bstruct\s+(\w+)\s*:\s*(?:[\w.]+\s*,\s*)*View\b")
_UIKIT_VC = re.compile(r"\bclass\s+(\w+)\s*:\s*UI\w*ViewController\b")
_SUBVIEW = re.compile(r"(Row|Cell|Button|Badge|Icon|Label|Previews?|Card|Modifier|Style)$")


def _app_id(value: object) -> str | None:
    return value if isinstance(value, str) and _APP_ID.match(value) else None


def detect_mobile(paths: list[str], files: dict[str, str], found: Findings) -> None:
    _expo(paths, files, found)
    _android(paths, files, found)
    _ios(paths, files, found)


# --- Expo / React Native ------------------------------------------------------------------


def _expo_config(root: str, files: dict[str, str], found: Findings) -> None:
    prefix = root + "/" if root else ""
    text = files.get(prefix + "app.json")
    config: dict = {}
    if text:
        try:
            data = json.loads(text)
            config = data.get("expo", data) if isinstance(data, dict) else {}
        except ValueError:
            config = {}
    else:  # app.config.js/ts: pick the literal values with regexes
        text = next(
            (files[p] for p in files if re.fullmatch(rf"{re.escape(prefix)}app\.config\.\w+", p)),
            "",
        )
        for key in ("scheme", "package", "bundleIdentifier"):
            if match := re.search(rf"\b{key}\s*:\s*['\"]([^'\"]+)['\"]", text):
                config.setdefault("_" + key, match.group(1))
        config = {
            "scheme": config.get("_scheme"),
            "android": {"package": config.get("_package")},
            "ios": {"bundleIdentifier": config.get("_bundleIdentifier")},
        }
    if not isinstance(config, dict):
        return
    scheme = config.get("scheme")
    scheme = scheme[0] if isinstance(scheme, list) and scheme else scheme
    if isinstance(scheme, str) and re.fullmatch(r"[a-z][a-z0-9+.\-]*", scheme):
        found.scheme = found.scheme or scheme
    for platform, key in (("android", "package"), ("ios", "bundleIdentifier")):
        section = config.get(platform)
        if isinstance(section, dict) and _app_id(section.get(key)):
            found.app_ids.setdefault(platform, section[key])


def _expo(paths: list[str], files: dict[str, str], found: Findings) -> None:
    manifests = package_manifests(files)
    roots = sorted(d for d, deps in manifests.items() if {"expo", "react-native"} & deps)
    if not roots:
        return
    for root in roots:
        deps = manifests[root]
        found.framework("react-native")
        if "expo" in deps:
            found.framework("expo")
        prefix = root + "/" if root else ""
        for path in paths:
            if re.fullmatch(rf"{re.escape(prefix)}(app\.json|app\.config\.\w+|eas\.json)", path):
                found.mark(path, "config")
        _expo_config(root, files, found)
        if "expo-router" in deps:
            found.framework("expo-router")
            _expo_router(paths, files, prefix, found)
        else:
            _react_navigation(paths, files, prefix, found)


def _tab_titles(layout: str | None) -> tuple[bool, dict[str, str]]:
    """From a `_layout` file: is it a tab navigator, and route name → title."""
    if not layout:
        return False, {}
    titles = {}
    for match in re.finditer(r"\.Screen\b", layout):
        chunk = layout[match.end() : match.end() + 400].split(".Screen", 1)[0]
        name = re.search(r"\bname\s*=\s*(['\"])([^'\"]+)\1", chunk)
        title = _TITLE_OPTION.search(chunk)
        if name and title:
            titles[name.group(2)] = title.group(2)
    return bool(re.search(r"<Tabs\b", layout)), titles


def _expo_router(paths: list[str], files: dict[str, str], prefix: str, found: Findings) -> None:
    for base in (prefix + "app/", prefix + "src/app/"):
        for path in sorted(p for p in paths if p.startswith(base) and p.endswith(_RN_EXT)):
            *dirs, name = path[len(base) :].split("/")
            stem = name.rsplit(".", 1)[0]
            if stem.startswith(("_", "+")) or ".test" in stem or ".spec" in stem:
                if stem == "_layout":
                    found.mark(path, "ui_component")
                continue
            segs = [d for d in dirs if not (d.startswith("(") and d.endswith(")"))]
            segs += [] if stem == "index" else [stem]
            route = "/" + "/".join(segs)
            is_tab, titles = _tab_titles(files.get(posixpath.dirname(path) + "/_layout.tsx"))
            text = files.get(path) or ""
            title = titles.get(stem) or _first(_TITLE_OPTION, text, 2) or _first(_RN_TEXT, text)
            if not segs:
                screen_name = "Home"
            elif segs[-1].startswith("["):
                parent = segs[-2] if len(segs) > 1 else "item"
                screen_name = title_words(parent.strip("[]")) + " detail"
            else:
                screen_name = title_words(segs[-1])
            clean = clean_route(route)
            link = f"{found.scheme}://{clean.lstrip('/')}" if found.scheme and clean else None
            found.screen(
                screen_name,
                path,
                route=route,
                title=title,
                tab_label=titles.get(stem) if is_tab else None,
                deep_link=link,
                root=route == "/",
            )


def _first(pattern: re.Pattern[str], text: str, group: int = 1) -> str | None:
    match = pattern.search(text)
    return ui_text(match.group(group)) if match else None


def _react_navigation(paths: list[str], files: dict[str, str], prefix: str, found: Findings):
    """`<Stack.Screen name="Settings" component={SettingsScreen} />` registrations."""
    first = True
    for path, text in sorted(files.items()):
        if not path.startswith(prefix) or not path.endswith(_RN_EXT):
            continue
        for match in re.finditer(r"\.Screen\b", text):
            chunk = text[match.end() : match.end() + 300].split(".Screen", 1)[0]
            name = re.search(r"\bname\s*=\s*(['\"])([^'\"]+)\1", chunk)
            comp = re.search(r"\bcomponent\s*=\s*\{\s*(\w+)", chunk)
            if not name:
                continue
            file = path
            if comp:
                spec = re.search(rf"import\s+{comp.group(1)}\s+from\s+['\"]([^'\"]+)", text)
                file = (resolve_module(path, spec.group(1), paths) if spec else None) or path
            title = _first(_TITLE_OPTION, chunk, 2) or _first(_RN_TEXT, files.get(file, ""))
            found.screen(title_words(name.group(2)), file, title=title, root=first)
            first = False


# --- Android ------------------------------------------------------------------------------


def _android(paths: list[str], files: dict[str, str], found: Findings) -> None:
    manifests = sorted(p for p in paths if p.endswith("AndroidManifest.xml"))
    gradle = sorted(p for p in paths if re.search(r"(^|/)build\.gradle(\.kts)?$", p))
    if not manifests and not any("com.android.application" in files.get(p, "") for p in gradle):
        return
    found.runtime("jvm")
    found.framework("android")
    found.language("kotlin" if any(p.endswith(".kt") for p in paths) else "java")
    if any(p.endswith(".java") for p in paths):
        found.language("java")
    for path in manifests + gradle + [p for p in paths if p.endswith("settings.gradle.kts")]:
        found.mark(path, "config")
    for path in gradle:
        text = files.get(path, "")
        if m := re.search(r"\bapplicationId\s*=?\s*['\"]([\w.]+)['\"]", text):
            found.app_ids.setdefault("android", m.group(1))
        if re.search(r"\bcompose\s*(=\s*)?true|androidx\.compose|compose\.", text):
            found.framework("jetpack-compose")
    strings = {}
    for path, text in files.items():
        if path.endswith("res/values/strings.xml"):
            strings.update(re.findall(r'<string\s+name="(\w+)"[^>]*>([^<]*)</string>', text))
    for path in manifests:
        _manifest(path, files.get(path, ""), paths, strings, found)
    for path, text in sorted(files.items()):
        if path.endswith(".kt"):
            start = re.search(r"startDestination\s*=\s*\"([^\"]+)\"", text)
            for route in re.findall(r"\bcomposable\(\s*(?:route\s*=\s*)?\"([\w/{}\-]+)\"", text):
                if start and route == start.group(1):
                    continue  # shown at launch: covered by the app-launch case
                name = title_words(route.split("/")[0] or "home")
                found.screen(name, path, route="/" + route)


def _manifest(path, text, paths, strings, found: Findings) -> None:
    package = re.search(r'<manifest\b[^>]*\bpackage="([\w.]+)"', text)
    if package:
        found.app_ids.setdefault("android", package.group(1))
    for match in re.finditer(r"<activity\b[^>]{0,4000}>", text):
        # A self-closing tag has no intent filters; otherwise read up to </activity>.
        closing = text.find("</activity>", match.end(), match.end() + 20000)
        end = match.end() if match.group().endswith("/>") else closing
        body = text[match.start() : end if end > 0 else len(text)]
        name = re.search(r'android:name="([\w.$]+)"', body)
        if not name:
            continue
        cls = name.group(1).split(".")[-1]
        file = next((p for p in paths if re.search(rf"(^|/){re.escape(cls)}\.(kt|java)$", p)), path)
        label = re.search(r'android:label="([^"]+)"', body)
        title = label.group(1) if label else None
        if title and title.startswith("@string/"):
            title = strings.get(title[len("@string/") :])
        launcher = "android.intent.category.LAUNCHER" in body
        data = re.search(r"<data\b([^>]*)>", body)
        link = None
        if data and (scheme := re.search(r'android:scheme="([\w+.\-]+)"', data.group(1))):
            host = re.search(r'android:host="([\w.\-]+)"', data.group(1))
            path_prefix = re.search(r'android:path(?:Prefix)?="(/[\w/\-]*)"', data.group(1))
            link = f"{scheme.group(1)}://{host.group(1) if host else ''}"
            link += path_prefix.group(1) if path_prefix else ""
        found.screen(
            title_words(cls), file, title=None if launcher else title, deep_link=link, root=launcher
        )


# --- iOS ----------------------------------------------------------------------------------


def _ios(paths: list[str], files: dict[str, str], found: Findings) -> None:
    swift = {p: t for p, t in files.items() if p.endswith(".swift")}
    if not swift and not any(p.endswith((".swift", "project.pbxproj")) for p in paths):
        return
    found.runtime("swift")
    found.language("swift")
    for path in paths:
        if path.endswith(("project.pbxproj", "Info.plist", "Package.swift", "Podfile")):
            found.mark(path, "config")
        elif re.search(r"Tests/[^/]+\.swift$", path):
            found.mark(path, "test_fixture")
    for path, text in files.items():
        if path.endswith("project.pbxproj"):
            for value in re.findall(r'PRODUCT_BUNDLE_IDENTIFIER = "?([\w.\-]+)"?;', text):
                if not value.endswith("Tests") and _app_id(value):
                    found.app_ids.setdefault("ios", value)
        elif path.endswith("Info.plist"):
            m = re.search(r"<key>CFBundleIdentifier</key>\s*<string>([^<$]+)</string>", text)
            if m and _app_id(m.group(1)):
                found.app_ids.setdefault("ios", m.group(1))
    all_swift = " ".join(swift.values())
    root = re.search(r"WindowGroup\s*\{\s*(\w+)\s*\(", all_swift)
    tabs = dict(
        re.findall(r"(\w+)\([^()]*\)\s*\.tabItem\s*\{\s*(?:Label|Text)\(\s*\"([^\"]+)\"", all_swift)
    )
    if "import SwiftUI" in all_swift:
        found.framework("swiftui")
    if _UIKIT_VC.search(all_swift):
        found.framework("uikit")
    for path, text in sorted(swift.items()):
        matches = list(_SWIFT_VIEW.finditer(text)) + list(_UIKIT_VC.finditer(text))
        for match in matches[:200]:  # bounded: each match reads its body
            name = match.group(1)
            if _SUBVIEW.search(re.sub(r"View$", "", name)):
                continue
            body = balanced(text, text.find("{", match.end()), 20000)
            title = re.search(r"\.navigationTitle\(\s*\"([^\"]+)\"", body) or re.search(
                r"\btitle\s*=\s*\"([^\"]+)\"", body
            )
            text_title = re.search(r"\bText\(\s*\"([^\"]+)\"", body)
            found.screen(
                title_words(name),
                path,
                title=(title or text_title).group(1) if (title or text_title) else None,
                tab_label=tabs.get(name),
                root=bool(root and root.group(1) == name),
            )
