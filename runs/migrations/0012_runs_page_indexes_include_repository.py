"""Include ``repository_id`` in the page indexes of ``runs``: a list narrowed to the
repositories a user may see (repositories.access) keeps its index-only scan of keys, checking
the repository in the index instead of reading each row it rejects.

Without locking writes, as 0006 built them; each index is missing between its drop and its
rebuild (lists are slower for those minutes, never wrong)."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("repositories", "0005_repository_grants"),
        ("runs", "0011_token_repositories_requester"),
    ]

    # One index at a time: dropped, then rebuilt under its name, so only one is ever missing.
    operations = [
        op
        for column, include in [
            ("status", ("target_framework", "trigger", "depth_level", "repository")),
            (
                "repo_full_name",
                ("status", "target_framework", "trigger", "depth_level", "repository"),
            ),
            (None, ("status", "target_framework", "trigger", "depth_level", "repository")),
            ("trigger", ("status", "target_framework", "depth_level", "repository")),
        ]
        for op in (
            RemoveIndexConcurrently(model_name="run", name=f"runs_{column or 'newest'}_page"),
            AddIndexConcurrently(
                model_name="run",
                index=models.Index(
                    fields=[*([column] if column else []), "-created_at", "-run_id"],
                    include=include,
                    name=f"runs_{column or 'newest'}_page",
                ),
            ),
        )
    ]
