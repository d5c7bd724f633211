"""Start the provider: ``python -m tests.oidc_provider.serve REDIRECT_URI LOGOUT_URI``, with
the environment :class:`tests.oidc_provider.Provider` sets. Migrates its sqlite database,
registers AMTP as a confidential client (authorization code, RS256, no consent screen: an
in-house application), prints the port it listens on, and serves until killed."""

import os
import sys

import django


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    django.setup()
    from django.core.management import call_command
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    redirect_uri, logout_uri = sys.argv[1:3]
    call_command("migrate", verbosity=0)
    Application.objects.create(
        name="AMTP",
        client_id=os.environ["PROVIDER_CLIENT_ID"],
        client_secret=os.environ["PROVIDER_CLIENT_SECRET"],
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect_uri,
        post_logout_redirect_uris=logout_uri,
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):  # the test reads stdout for the port only
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet)
    server.set_app(get_wsgi_application())
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
