"""A real OpenID provider for the sign-in tests: django-oauth-toolkit's, in its own process
with its own sqlite database (``tests/oidc_provider/serve.py`` starts it). Nothing here is
AMTP's: it stands for the company's identity provider."""

import os

SECRET_KEY = os.environ["PROVIDER_SECRET_KEY"]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "tests.oidc_provider.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [os.path.join(os.path.dirname(__file__), "templates")],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["PROVIDER_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True
# Cookies are per host, not per port: AMTP on the same 127.0.0.1 keeps its own.
SESSION_COOKIE_NAME = "provider_session"
CSRF_COOKIE_NAME = "provider_csrf"
LOGIN_URL = "/login/"
# A fast hasher: the users' passwords are the test's, not anybody's.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ["PROVIDER_RSA_KEY"],
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "email": "e-mail", "profile": "profile"},
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.Validator",
}
# Its errors go to the test's stderr (captured by pytest): a failing provider says why.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"django.request": {"handlers": ["stderr"], "level": "ERROR"}},
}
