"""sanitize_llm_output matches its JavaScript reference function exactly."""

import json
import shutil
import subprocess

import pytest

from agents.sanitizer import SANITIZER_VERSION, sanitize_llm_output

REFERENCE_JS = """
function sanitizeLlmOutput(raw) {
  let s = raw.trim();
  if (s.startsWith("```json")) s = s.slice("```json".length);
  else if (s.startsWith("```"))  s = s.slice(3);
  if (s.endsWith("```")) s = s.slice(0, s.length - 3);
  return s.trim();
}
const inputs = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(inputs.map(sanitizeLlmOutput)));
"""

# (raw, expected) — expected values are the reference function's answers.
CASES = [
    ('{"a": 1}', '{"a": 1}'),
    ('```json\n{"a": 1}\n```', '{"a": 1}'),
    ('```\n{"a": 1}\n```', '{"a": 1}'),
    ('  \n\t```json{"a":1}```  \n', '{"a":1}'),
    ('```json\n{"a": 1}', '{"a": 1}'),  # only a leading fence
    ('{"a": 1}\n```', '{"a": 1}'),  # only a trailing fence
    ('{"code": "```json x ```"}', '{"code": "```json x ```"}'),  # fences inside strings kept
    ('```JSON\n{"a": 1}\n```', 'JSON\n{"a": 1}'),  # case-sensitive: only ``` is stripped
    ("```jsonc\n{}\n```", "c\n{}"),  # "```json" prefix of "```jsonc"
    ("```json\n```json\n{}\n```\n```", "```json\n{}\n```"),  # one fence each side, no more
    ("", ""),
    ("   \n\t ", ""),
    ("```", ""),
    ("``````", ""),
    ("Here is the JSON:\n```json\n{}\n```", "Here is the JSON:\n```json\n{}"),  # prose kept
    ("\ufeff{}\u00a0", "{}"),  # JS trim strips BOM and NBSP
    ("\x1c{}\x85", "\x1c{}\x85"),  # ... but not U+001C / U+0085, which Python's strip() would
    ("\u2028```json {} ```\u3000", "{}"),
]


@pytest.mark.parametrize("raw,expected", CASES)
def test_table(raw, expected):
    assert sanitize_llm_output(raw) == expected


def test_version():
    assert SANITIZER_VERSION == "v1.0.0"


def test_table_matches_running_the_reference_javascript():
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to cross-check the reference function (apt-get install nodejs)")
    raws = [raw for raw, _ in CASES]
    out = subprocess.run(
        [node, "-e", REFERENCE_JS],
        input=json.dumps(raws),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == [sanitize_llm_output(raw) for raw in raws]
