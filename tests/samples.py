"""Small but realistic sample repositories (path → contents), one per supported stack.

`SAMPLE_REPOS` feeds the offline-rule tests; `DEMO_WEB` (Express API + React pages) and
`DEMO_MOBILE` (an Expo app) are the product's demo repositories. The repositories themselves
live in per-family modules to keep each file small.
"""

from runs.demo.content import DEMO_MOBILE, DEMO_WEB
from tests.samples_mobile import ANDROID, EXPO, IOS
from tests.samples_python import DJANGO, FASTAPI, FLASK
from tests.samples_web import EXPRESS, NEXTJS, REACT

SAMPLE_REPOS: dict[str, dict[str, str]] = {
    "express": EXPRESS,
    "nextjs": NEXTJS,
    "react": REACT,
    "django": DJANGO,
    "flask": FLASK,
    "fastapi": FASTAPI,
    "expo": EXPO,
    "android": ANDROID,
    "ios": IOS,
}

__all__ = ["DEMO_MOBILE", "DEMO_WEB", "SAMPLE_REPOS"]
