"""``manage.py mcp_github``: serve the amtp-github-mcp MCP server on stdio."""

from django.core.management.base import BaseCommand

from repositories.mcp_server import RepoServer


class Command(BaseCommand):
    help = "Serve the amtp-github-mcp MCP server (tools repo.tree and repo.read_file) on stdio."

    def add_arguments(self, parser):
        parser.add_argument("--crawl-id", default="", help="Count cache hits under this crawl id.")
        parser.add_argument("--repo", default="", help="Only allow reads of this owner/name.")

    def handle(self, *args, crawl_id, repo, **options):
        RepoServer(crawl_id=crawl_id, allowed_repo=repo).run("stdio")
