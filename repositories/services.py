"""Repository settings: the one place their rules are checked and they are written.

The admin form, ``launch_run`` and the demo all save through :func:`repository_create` and
:func:`repository_update`, so a repository one surface accepts is one every other surface, and
the runs it starts, accept: owner/name is ``repositories.names``' rule, the test directory is
``repositories.paths``' (the Test Engineer's gate uses the same function).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError

from amtp_site import rows
from repositories import credentials, test_data
from repositories.boot_settings import BOOT_ENV, ENV_TWICE, boot_problems, parse_env
from repositories.errors import CredentialsUnavailable, RepositoryAccessError, RepositoryInvalid
from repositories.hosts.local import LocalGitHost
from repositories.login import CREDENTIALS, normalised_login_path, recipe_problems
from repositories.models import Host, Repository
from repositories.names import full_name_problem
from repositories.notify_rules import (
    email_problems,
    event_problems,
    list_problems,
    webhook_problem,
)
from repositories.paths import checked_test_dir
from repositories.refnames import ref_problem
from repositories.targets import (
    MAX_ALLOW_HOSTS,
    parse_allow_host,
    preview_template_problem,
    target_address_problem,
    target_url_problem,
)

LOCAL_PATH_REQUIRED = "a repository on the 'local' host needs the path of its git repository"
LOCAL_PATH_NOT_ABSOLUTE = "give an absolute path"
LOCAL_PATH_CONTROL = "the path contains a control character"
LOCAL_PATH_NOT_TEXT = "give the path as text"
LOCAL_PATH_UNUSED = "only repositories on the 'local' host have a local path; leave it empty"
AT_LEAST_ONE = "must be at least 1"
MAX_WEBHOOK_BRANCHES = 50
TOO_MANY_BRANCHES = f"at most {MAX_WEBHOOK_BRANCHES} branches"
BRANCHES_NOT_A_LIST = "give a list of branch names"
ALLOW_HOSTS_NOT_A_LIST = "give a list of HOST or HOST:PORT entries"
TOO_MANY_ALLOW_HOSTS = f"at most {MAX_ALLOW_HOSTS} hosts"
MIN_WEBHOOK_SECRET = 20
WEBHOOK_SECRET_SHORT = (
    f"at least {MIN_WEBHOOK_SECRET} characters: a random value, e.g. from "
    "`python -c 'import secrets; print(secrets.token_hex(32))'`"
)
WEBHOOK_SECRET_SPACES = "no spaces or control characters (GitHub signs with the value as typed)"
MAX_LABELS, MAX_LABEL_LENGTH = 10, 50  # GitHub refuses label names over 50 characters
LABELS_NOT_A_LIST = "give a list of label names"
TOO_MANY_LABELS = f"at most {MAX_LABELS} labels"
LABEL_INVALID = (
    "label {label!r}: 1 to {limit} characters, no commas or control characters, no spaces at "
    "either end"
)
LABEL_REPEATED = "label {label!r} is listed twice (GitHub's label names ignore case)"
PR_CHECKS_NEED_PREVIEW = (
    "pull request checks need the PR preview URL template (a URL with {pr}, {sha} or {branch}, "
    "or {deployment})"
)
MAX_RETENTION_DAYS = 36_500
RETENTION_RANGE = f"between 1 and {MAX_RETENTION_DAYS} days, or empty to keep runs forever"

# Every setting a person chooses (not the id or the timestamps).
FIELDS = tuple(f.name for f in rows.fields(Repository) if f.editable and not f.primary_key)
LIMITS = ("max_concurrent_runs", "rate_limit_runs", "rate_limit_window_seconds")


def repository_create(**fields: Any) -> Repository:
    """A new repository with ``fields`` over the model's defaults, or RepositoryInvalid."""
    return Repository.objects.create(**repository_validate(**fields))


def repository_update(*, repository: Repository, **fields: Any) -> Repository:
    """``repository`` with ``fields`` changed and saved, or RepositoryInvalid (nothing saved,
    ``repository`` untouched)."""
    for name, value in repository_validate(repository=repository, **fields).items():
        setattr(repository, name, value)
    repository.save()
    return repository


def repository_allow_hosts_add(*, repository: Repository, hosts: list[str]) -> list[str]:
    """``hosts`` added to ``repository``'s allowed hosts and saved, checked as the admin checks
    them (the preview URL judged against the new list); the entries that were not listed yet.
    RepositoryInvalid otherwise, nothing saved. For ``--allow-host`` at the shell."""
    before = list(repository.allowed_hosts)
    repository_update(repository=repository, allowed_hosts=[*before, *hosts])
    return [entry for entry in repository.allowed_hosts if entry not in before]


def repository_validate(*, repository: Repository | None = None, **fields: Any) -> dict:
    """Every setting as it would be saved (``fields`` over ``repository``'s values, else the
    defaults), normalised; or RepositoryInvalid naming each field and every rule it breaks.

    The model's own rules (type, length, choice) come first; a field that breaks one is not
    checked further, so each problem is reported once."""
    unknown = sorted(set(fields) - set(FIELDS) - set(CREDENTIALS) - {BOOT_ENV})
    if unknown:
        raise TypeError(f"not repository settings: {', '.join(unknown)}")
    plain = {name: fields.pop(name) for name in CREDENTIALS if name in fields}
    boot_env = fields.pop(BOOT_ENV, None)  # None: the stored values stay; "": removed
    candidate = copy.copy(repository) if repository is not None else Repository()
    for name, value in fields.items():
        setattr(candidate, name, value)
    errors = _django_problems(candidate.clean_fields)
    values = {name: getattr(candidate, name) for name in FIELDS}  # as the model coerced them
    for name, rule in _RULES.items():
        if name not in errors and (problems := rule(values[name])):
            errors[name] = problems
    if not {"preview_url", "allowed_hosts"} & errors.keys():
        problem = target_address_problem(values["preview_url"], values["allowed_hosts"])
        errors.update({"preview_url": [problem]} if problem else {})
    if (
        values["pr_checks"]
        and not values["pr_preview_url_template"]
        and not errors.keys()
        & {
            "pr_checks",
            "pr_preview_url_template",
        }
    ):
        errors["pr_checks"] = [PR_CHECKS_NEED_PREVIEW]
    errors.update(test_data.hook_problems(values, set(errors)))
    if not {"host", "local_path"} & errors.keys():
        errors.update(
            _host_problems(values, checkable=not {"full_name", "default_branch"} & errors.keys())
        )
    errors.update(_login_problems(values, candidate, plain, errors))
    boot_env_values = _boot_problems(values, candidate, boot_env, errors)
    errors.update(_django_problems(candidate.validate_unique, exclude=set(errors)))
    if errors:
        raise RepositoryInvalid(errors)
    values.update(_login_tokens(candidate, plain))  # encrypted last: nothing else is wrong
    values.update(_boot_env_token(boot_env_values))
    values["test_dir"] = checked_test_dir(values["test_dir"])[0]
    values["allowed_hosts"] = normalised_allow_hosts(values["allowed_hosts"])
    return values


def _login_problems(
    values: dict, candidate: Repository, plain: dict, errors: dict
) -> dict[str, list[str]]:
    """The login recipe's problems; ``values["login_path"]`` normalised to a path."""
    if "login_path" in errors:
        return {}
    preview = values["preview_url"] if "preview_url" not in errors else ""
    values["login_path"], problem = normalised_login_path(values["login_path"], preview)
    if problem:
        return {"login_path": [problem]}
    tokens = {f"{name}_token": getattr(candidate, f"{name}_token") for name in CREDENTIALS}
    found = recipe_problems({**values, **tokens}, plain)
    return {name: messages for name, messages in found.items() if name not in errors}


def _boot_problems(values: dict, candidate: Repository, typed, errors: dict) -> dict | None:
    """Adds the boot settings' problems to ``errors``; the typed environment as a dict (None:
    the stored one stays)."""
    errors.update({k: v for k, v in boot_problems(values).items() if k not in errors})
    if typed is None:
        env, names = None, set(candidate.boot_env_names or ())
    elif not isinstance(typed, str):
        env, names = None, set()
        errors[BOOT_ENV] = ["give NAME=value lines as text"]
    else:
        env, problem = parse_env(typed)
        names = set(env)
        errors.update({BOOT_ENV: [problem]} if problem else {})
    twice = names & set(values["boot_env_worker"] or ()) if "boot_env_worker" not in errors else ()
    if twice:
        errors.setdefault("boot_env_worker", [ENV_TWICE.format(names=", ".join(sorted(twice)))])
    return env


def _boot_env_token(env: dict | None) -> dict:
    """The app's stored environment as it will be saved: names shown, values encrypted."""
    if env is None:
        return {}
    try:
        token = credentials.encrypt(json.dumps(env)) if env else ""
    except CredentialsUnavailable as exc:
        raise RepositoryInvalid({BOOT_ENV: [exc.message]}) from None
    return {"boot_env_names": sorted(env), "boot_env_token": token}


def _login_tokens(candidate: Repository, plain: dict) -> dict[str, str]:
    """The credential tokens as they will be saved: the typed values encrypted, "" removed,
    the others kept; RepositoryInvalid when there is no key to encrypt with."""
    tokens = {f"{name}_token": getattr(candidate, f"{name}_token") for name in CREDENTIALS}
    for name, value in plain.items():
        if value is None:
            continue  # kept
        try:
            tokens[f"{name}_token"] = credentials.encrypt(value) if value else ""
        except CredentialsUnavailable as exc:
            raise RepositoryInvalid({name: [exc.message]}) from None
    return tokens


def normalised_allow_hosts(entries: list[str]) -> list[str]:
    """Valid allow-list entries as stored: lower-case, ``[v6]:PORT``, each once, in order."""
    shown = []
    for host, port in map(parse_allow_host, entries):
        name = f"[{host}]" if ":" in host and port is not None else host
        shown.append(f"{name}:{port}" if port is not None else name)
    return list(dict.fromkeys(shown))


def _listed(problem: str | None) -> list[str]:
    return [problem] if problem else []


def _branch_problems(branches: Any) -> list[str]:
    limits = (MAX_WEBHOOK_BRANCHES, BRANCHES_NOT_A_LIST, TOO_MANY_BRANCHES)
    if problems := list_problems(branches, *limits):
        return problems
    return [p for p in map(ref_problem, branches) if p]


def allow_host_problems(entries: Any) -> list[str]:
    limits = (MAX_ALLOW_HOSTS, ALLOW_HOSTS_NOT_A_LIST, TOO_MANY_ALLOW_HOSTS)
    if problems := list_problems(entries, *limits):
        return problems
    for entry in entries:
        try:
            parse_allow_host(entry)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def _secret_problems(secret: str) -> list[str]:
    if not secret:
        return []  # the global secret applies
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in secret):
        return [WEBHOOK_SECRET_SPACES]
    return [WEBHOOK_SECRET_SHORT] if len(secret) < MIN_WEBHOOK_SECRET else []


def _label_problems(labels: Any) -> list[str]:
    if problems := list_problems(labels, MAX_LABELS, LABELS_NOT_A_LIST, TOO_MANY_LABELS):
        return problems
    seen = set()
    for label in labels:
        if (
            not 0 < len(label) <= MAX_LABEL_LENGTH
            or label != label.strip()
            or "," in label
            or any(ord(c) < 32 or ord(c) == 127 for c in label)
        ):
            problems.append(LABEL_INVALID.format(label=label, limit=MAX_LABEL_LENGTH))
        elif label.casefold() in seen:
            problems.append(LABEL_REPEATED.format(label=label))
        seen.add(label.casefold())
    return problems


def _at_least_one(value: int) -> list[str]:
    return [AT_LEAST_ONE] if value < 1 else []


def _retention_problems(days: int | None) -> list[str]:
    return [] if days is None or 1 <= days <= MAX_RETENTION_DAYS else [RETENTION_RANGE]


_RULES: dict[str, Callable[[Any], list[str]]] = {
    "full_name": lambda name: _listed(full_name_problem(name)),
    "default_branch": lambda branch: _listed(ref_problem(branch)),
    "test_dir": lambda test_dir: checked_test_dir(test_dir)[1],
    "webhook_branches": _branch_problems,
    "preview_url": lambda url: _listed(target_url_problem(url)),
    "pr_preview_url_template": lambda template: _listed(preview_template_problem(template)),
    "allowed_hosts": allow_host_problems,
    "webhook_secret": _secret_problems,
    "pull_request_labels": _label_problems,
    "notify_emails": email_problems,
    "notify_email_events": event_problems,
    "notify_webhook_url": lambda url: _listed(webhook_problem(url)),
    "notify_webhook_events": event_problems,
    "retention_days": _retention_problems,
    **dict.fromkeys(LIMITS, _at_least_one),
    "test_data_setup_url": lambda url: _listed(test_data.url_problem(url)),
    "test_data_teardown_url": lambda url: _listed(test_data.url_problem(url)),
    "test_data_setup_command": test_data.command_problems,
    "test_data_teardown_command": test_data.command_problems,
    "test_data_timeout_s": test_data.timeout_problems,
}


def _host_problems(values: dict, *, checkable: bool) -> dict[str, list[str]]:
    """A local repository must be a git repository whose default branch names a commit:
    asked of the host the workers will use, as the first question they will ask."""
    host, path = values["host"], values["local_path"]
    if not isinstance(path, str):  # blank is allowed, so the model does not check its type
        return {"local_path": [LOCAL_PATH_NOT_TEXT]}
    if host != Host.LOCAL:
        return {"local_path": [LOCAL_PATH_UNUSED]} if path else {}
    problem = None
    if not path:
        problem = LOCAL_PATH_REQUIRED
    elif any(ord(c) < 32 or ord(c) == 127 for c in path):
        problem = LOCAL_PATH_CONTROL
    elif not os.path.isabs(path):
        problem = LOCAL_PATH_NOT_ABSOLUTE
    elif checkable:  # else the name or branch has its own error already
        try:
            LocalGitHost(values["full_name"], path).resolve_ref(values["default_branch"])
        except RepositoryAccessError as exc:
            problem = str(exc)
    return {"local_path": [problem]} if problem else {}


def _django_problems(check: Callable[..., None], **kwargs: Any) -> dict[str, list[str]]:
    """The model's own validation as {field: messages}."""
    try:
        check(**kwargs)
    except ValidationError as exc:
        return {name: list(messages) for name, messages in exc.message_dict.items()}
    return {}
