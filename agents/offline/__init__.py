"""Brains of the `offline` LLM provider: deterministic, rule-based, no network.

The provider (wrapped elsewhere in the common provider interface) answers each agent with
these pure functions:

- Repo Crawler: `plan_reads(paths)` → files to read; `detect(paths, read)` →
  `(entry_points, detected_stack)`.
- Test Case Generator: `generate_cases(crawler_output, depth_level)` → output object.
- Test Engineer: `generate_files(test_engineer_input, test_dir=..., app_id=...)` → files.

Everything they produce is labelled as rule-generated (`HEADER`).
"""

from .cases import DEPTHS, generate_cases
from .code import generate_files
from .common import HEADER
from .maestro import COMMANDS as MAESTRO_COMMANDS
from .stack import MAX_READS, detect, plan_reads

__all__ = [
    "DEPTHS",
    "HEADER",
    "MAESTRO_COMMANDS",
    "MAX_READS",
    "detect",
    "generate_cases",
    "generate_files",
    "plan_reads",
]
