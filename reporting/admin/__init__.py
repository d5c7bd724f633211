"""The admin pages of reporting: the dashboard and a repository's health (views mounted in amtp_site/urls.py)."""
