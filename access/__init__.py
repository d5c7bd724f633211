"""Who may call AMTP: API tokens, OIDC trust rules for CI tokens, the API's authentication.

The per-repository rule (grants, roles) stays in ``repositories.access``: repositories' own
admin filters by it too."""
