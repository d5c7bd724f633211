"""`make run`'s first step: exit 1 with a clear message when the web port is taken, before
any service starts. Usage: scripts/port_free.py PORT"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amtp_site.ports import PORT_INVALID, port_problem  # noqa: E402

if __name__ == "__main__":
    arg = sys.argv[1] if len(sys.argv) > 1 else ""
    problem = port_problem(int(arg)) if arg.isdigit() else PORT_INVALID.format(port=arg)
    if problem:
        print(f"make run: {problem}", file=sys.stderr)
        sys.exit(1)
