"""The provider's claims: the standard ones, and ``groups`` (the user's groups at the provider,
as Okta and Keycloak send them) with the ``profile`` scope. And ``prompt=none`` (OpenID Connect
Core 1.0 §3.1.2.1), which django-oauth-toolkit leaves to the deployment: its authorization view
only runs for a signed-in user, and AMTP is an in-house client that needs no consent."""

from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "profile"}

    def get_additional_claims(self, request):
        user = request.user
        return {
            "email": user.email,
            "email_verified": True,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "preferred_username": user.username,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }

    def validate_silent_login(self, request):
        return True  # the view is behind the provider's login: a session exists

    def validate_silent_authorization(self, request):
        return True  # no consent screen for AMTP (skip_authorization)
