"""Throwaway git repositories for tests, built with the real ``git`` CLI.

Commits use a fixed identity and ignore the developer's global and system git config, so tests
behave the same on every machine (no gpg signing prompts, no default-branch surprises).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

TEST_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.test",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.test",
}


def _git_env(env: dict[str, str] | None = None) -> dict[str, str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full_env.update(TEST_IDENTITY, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    full_env.update(env or {})
    return full_env


def git(path: str | os.PathLike[str], *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``path`` with an isolated config; stdout, stripped. Raises on failure."""
    proc = subprocess.run(
        ["git", *args], cwd=path, env=_git_env(env), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def import_git_repo(
    path: str | os.PathLike[str], files: dict[str, str | bytes], branch: str = "main"
) -> str:
    """A bare repository at ``path`` with one commit of ``files``, written by one
    ``git fast-import``: no working tree and no process per file, so 100,000 files take
    seconds. Paths must not contain a newline or start with a quote. Returns the path."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "--quiet", "--bare", f"--initial-branch={branch}")
    chunks = [
        f"commit refs/heads/{branch}\n".encode(),
        b"committer Test Author <author@example.test> 1700000000 +0000\n",
        b"data 14\ninitial commit\n",
    ]
    for rel, content in files.items():
        data = content if isinstance(content, bytes) else content.encode()
        chunks += [b"M 100644 inline ", rel.encode(), b"\ndata %d\n" % len(data), data, b"\n"]
    proc = subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=root,
        env=_git_env(),
        input=b"".join(chunks),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git fast-import failed: {proc.stderr.decode().strip()}")
    return str(root)


def _write(root: Path, files: dict[str, str | bytes | None]) -> None:
    for rel, content in files.items():
        target = root / rel
        if content is None:
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def make_git_repo(
    path: str | os.PathLike[str],
    files: dict[str, str | bytes],
    branch: str = "main",
    symlinks: dict[str, str] | None = None,
) -> str:
    """A non-bare repository at ``path`` with one commit of ``files`` on ``branch``.

    ``symlinks`` maps link path -> target (committed as git symlinks, mode 120000).
    Returns the repository path as a string.
    """
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "--quiet", f"--initial-branch={branch}")
    _write(root, files)
    for link, target in (symlinks or {}).items():
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / link)
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "--allow-empty", "-m", "initial commit")
    return str(root)


def commit_files(
    path: str | os.PathLike[str],
    files: dict[str, str | bytes | None],
    branch: str = "main",
    message: str = "update files",
) -> str:
    """Commit ``files`` (None deletes a file) on ``branch``; returns the new commit SHA.

    A branch that does not exist yet is created from HEAD.

    Works without touching a checkout: the commit is built on a temporary index, so it also
    works for bare repositories and for branches that are not checked out. If ``branch`` is
    the checked-out branch of a working tree, the working tree is brought along (``reset
    --hard``) so it does not appear to undo the commit.
    """
    root = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        try:
            parent = git(root, "rev-parse", "--verify", f"refs/heads/{branch}^{{commit}}")
            old = parent
        except RuntimeError:  # a new branch starts from HEAD
            parent, old = git(root, "rev-parse", "--verify", "HEAD^{commit}"), "0" * 40
        git(root, "read-tree", parent, env=env)
        for rel, content in files.items():
            if content is None:
                git(root, "update-index", "--force-remove", "--", rel, env=env)
                continue
            blob_file = Path(tmp) / "blob"
            blob_file.write_bytes(content if isinstance(content, bytes) else content.encode())
            blob = git(root, "hash-object", "-w", "--no-filters", str(blob_file))
            git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=env)
        tree = git(root, "write-tree", env=env)
    sha = git(root, "commit-tree", tree, "-p", parent, "-m", message)
    git(root, "update-ref", f"refs/heads/{branch}", sha, old)
    if git(root, "rev-parse", "--is-bare-repository") == "false":
        if git(root, "rev-parse", "--symbolic-full-name", "HEAD") == f"refs/heads/{branch}":
            git(root, "reset", "--quiet", "--hard", sha)
    return sha


def bare_clone(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> str:
    """A bare copy of ``source`` at ``dest``; returns ``dest`` as a string."""
    git(Path(source).parent, "clone", "--quiet", "--bare", str(source), str(dest))
    return str(dest)
