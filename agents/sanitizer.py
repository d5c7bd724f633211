"""SanitizeLlmOutput v1.0.0, exactly its JavaScript reference function (tests/test_sanitizer.py).

Strip one leading ```json or ``` fence, one trailing ``` fence, trim whitespace. No other
mutation. "Whitespace" is ECMAScript's ``String.prototype.trim`` set, not Python's
``str.strip()`` (which also strips U+001C..U+001F and U+0085 but not U+FEFF), so the Python
port gives the reference's answer on every input.
"""

from __future__ import annotations

SANITIZER_VERSION = "v1.0.0"

# ECMAScript WhiteSpace + LineTerminator code points (ECMA-262 §12.2, §12.3).
JS_WHITESPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _js_trim(s: str) -> str:
    return s.strip(JS_WHITESPACE)


def sanitize_llm_output(raw: str) -> str:
    s = _js_trim(raw)
    if s.startswith("```json"):
        s = s[len("```json") :]
    elif s.startswith("```"):
        s = s[3:]
    if s.endswith("```"):
        s = s[:-3]
    return _js_trim(s)
