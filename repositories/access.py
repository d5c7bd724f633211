"""Who may do what on which repository: the one rule, for every surface.

Rights come from two places and add up:

- **a Django permission held the ordinary way** (on the user or one of their groups, what
  ``ModelBackend`` answers) holds on *every* repository. That is how AMTP worked before grants
  existed, and how a small team keeps working: nothing to set up, nobody locked out;
- **a grant** (:class:`~repositories.models.RepositoryGrant`) gives a user or a group a role on
  *one* repository; :data:`ROLE_PERMS` spells each role out as the same Django permissions.

Superusers may do everything. :class:`RepositoryBackend` (in ``AUTHENTICATION_BACKENDS``)
answers Django's object-permission API with this rule: ``user.has_perm("runs.change_run",
run)`` asks about the run's repository; ``user.has_perm("runs.change_run")`` (no object) asks
whether the user may do it *somewhere*, which is what the admin's and the API's gates ask
before a list is narrowed by :func:`restrict` or an object is checked with :func:`may`.

A token may be narrowed further to a set of repository ids (``only``); a token without an
owner (a service token) has no rights of its own to intersect, only its list.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import BaseBackend
from django.db.models import Q, QuerySet

from repositories.models import Repository, RepositoryGrant, Role

VIEW = frozenset(
    {
        "repositories.view_repository",
        "runs.view_run",
        "runs.view_stage",
        "runs.view_artifact",
        "approvals.view_approval",
    }
)
LAUNCH = frozenset({"runs.add_run", "runs.change_run"})
DECIDE = frozenset({"approvals.decide_approval"})
ROLE_PERMS: dict[str, frozenset[str]] = {
    Role.VIEWER: VIEW,
    Role.OPERATOR: VIEW | LAUNCH,
    Role.APPROVER: VIEW | DECIDE,
    Role.ADMIN: VIEW | LAUNCH | DECIDE | {"repositories.change_repository"},
}

NEEDS_ROLE = (
    "{action} on {repository} needs a role on it that allows it ({roles}), or the "
    "{permission} permission on every repository"
)

_CACHE = "_repository_perm_cache"


def roles_allowing(perms: Iterable[str]) -> list[str]:
    """The roles that give any of ``perms``, in the order of :class:`Role`."""
    perms = set(perms)
    return [role for role in Role.values if ROLE_PERMS[role] & perms]


def refusal(action: str, repository: str, perms: Iterable[str]) -> str:
    """The 403 text of a caller who can see the repository but lacks the right."""
    perms = sorted(perms)
    return NEEDS_ROLE.format(
        action=action,
        repository=repository,
        roles=" or ".join(roles_allowing(perms)),
        permission=" or ".join(f"'{p}'" for p in perms),
    )


def is_global(user, perms: Iterable[str]) -> bool:
    """``user`` may do any of ``perms`` on every repository: a superuser, or one holding the
    permission the ordinary way (this module's backend adds nothing to that set)."""
    if user is None or not user.is_active:
        return False
    if user.is_superuser:
        return True
    held = user.get_all_permissions()  # cached on the user by ModelBackend
    return any(perm in held for perm in perms)


def _granted(user) -> dict[int, frozenset[str]]:
    """{repository id: permissions} from the user's grants and their groups' grants; one
    query per user object (a request's user lives as long as the request)."""
    cached = getattr(user, _CACHE, None)
    if cached is not None:
        return cached
    memberships = get_user_model().groups.through.objects.filter(user_id=user.pk)
    mine = Q(user_id=user.pk) | Q(group_id__in=memberships.values("group_id"))
    found: dict[int, frozenset[str]] = {}
    for repository_id, role in RepositoryGrant.objects.filter(mine).values_list(
        "repository_id", "role"
    ):
        found[repository_id] = found.get(repository_id, frozenset()) | ROLE_PERMS[role]
    setattr(user, _CACHE, found)
    return found


def forget(user) -> None:
    """Drop the grants cached on ``user`` (after granting in the same request or test)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def repository_ids(user, perms: Iterable[str], *, only=None) -> frozenset[int] | None:
    """The ids of the repositories where ``user`` may do any of ``perms``, narrowed to
    ``only`` when given; None means every repository. ``user`` None (a service token) reaches
    exactly ``only``, and nothing without it."""
    perms = frozenset(perms)
    only = None if only is None else frozenset(only)
    if user is None or not user.is_active:
        return only if user is None and only is not None else frozenset()
    if is_global(user, perms):
        return only
    granted = frozenset(rid for rid, held in _granted(user).items() if held & perms)
    return granted if only is None else granted & only


def restrict(queryset: QuerySet, user, perms: Iterable[str], *, only=None, via="repository"):
    """``queryset`` narrowed to the rows whose repository (the foreign-key path ``via``, e.g.
    ``run__repository``; ``pk`` for repositories themselves) ``user`` may do any of ``perms``
    on. A literal id list: the planner sees the values and keeps the page on its index."""
    ids = repository_ids(user, perms, only=only)
    if ids is None:
        return queryset
    return queryset.filter(**{f"{via}__in": sorted(ids)})


def visible_ids(names, user, *, everything: bool = False) -> dict[str, int]:
    """{full name: id} of the repositories among ``names`` that ``user`` may see (all of them
    with ``everything``: trusted code). A name no repository can have (not text, too long, a
    NUL PostgreSQL refuses) is left out without asking the database."""
    askable = [n for n in names if isinstance(n, str) and len(n) <= 200 and "\x00" not in n]
    found = Repository.objects.filter(full_name__in=askable)
    if not everything:
        found = restrict(found, user, VIEW, via="pk")
    return dict(found.values_list("full_name", "pk"))


def repository_id_of(obj) -> int | None:
    """The repository an object belongs to: a repository, a run (``repository_id``), or
    anything with a ``run`` (stage, artifact, approval)."""
    if isinstance(obj, Repository):
        return obj.pk
    if hasattr(obj, "repository_id"):
        return obj.repository_id
    run = getattr(obj, "run", None)
    return getattr(run, "repository_id", None)


def may(user, perms: Iterable[str], obj, *, only=None) -> bool:
    """``user`` (narrowed to ``only``) may do any of ``perms`` on ``obj``'s repository."""
    repository_id = repository_id_of(obj)
    if repository_id is None:
        return False
    ids = repository_ids(user, perms, only=only)
    return ids is None or repository_id in ids


def perms_somewhere(user) -> frozenset[str]:
    """Every permission some grant gives ``user``, on some repository."""
    found: frozenset[str] = frozenset()
    for held in _granted(user).values():
        found |= held
    return found


class RepositoryBackend(BaseBackend):
    """Django's object permissions for repositories and what belongs to them. Authenticates
    nobody; ``ModelBackend`` keeps answering for permissions without an object."""

    def has_perm(self, user_obj, perm, obj=None):
        if not user_obj.is_active or user_obj.is_anonymous:
            return False
        if obj is None:
            return perm in perms_somewhere(user_obj)
        return may(user_obj, (perm,), obj)

    def has_module_perms(self, user_obj, app_label):
        if not user_obj.is_active or user_obj.is_anonymous:
            return False
        return any(perm.startswith(f"{app_label}.") for perm in perms_somewhere(user_obj))
