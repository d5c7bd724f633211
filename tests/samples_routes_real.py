"""Route registrations excerpted from real projects (path → contents), with the routes each
must yield in `ROUTES_REAL`: prefixes given where a Blueprint or router is registered, not where
it is defined. Module structure, imports, router definitions, registrations and decorators are
verbatim; view bodies are cut to `...`.

- microblog: miguelgrinberg/microblog @ a975ef64 (MIT, "Copyright (c) 2017 Miguel Grinberg"):
  blueprints registered in the app factory with `url_prefix`, routes on an imported `bp`.
- fastapi_template: fastapi/full-stack-fastapi-template @ 68adb40d, `backend/` (MIT, "Copyright
  (c) 2019 Sebastián Ramírez"): `include_router(api_router, prefix=settings.API_V1_STR)`, a
  prefix named by a settings field; routers with their own prefixes; a subset of the routes.
- express_multi_router: expressjs/express @ a3714473, `examples/multi-router` (MIT, "Copyright
  (c) 2009-2014 TJ Holowaychuk …"); `require('../..')` is the example's own checkout of
  express, so a package.json naming express stands in for it.
- djangox: wsvincent/djangox @ 56aa62e0 (MIT): `include("allauth.urls")`, an installed app's
  URLconf that is not in the repository, beside `include("pages.urls")`.
"""

MICROBLOG = {
    "requirements.txt": "Flask==3.0.0\nFlask-Login==0.6.3\nFlask-SQLAlchemy==3.1.1\n",
    "app/__init__.py": """import logging
from logging.handlers import SMTPHandler, RotatingFileHandler
import os
from flask import Flask, request, current_app
from flask_sqlalchemy import SQLAlchemy
from flask_migrate import Migrate
from flask_login import LoginManager
from flask_mail import Mail
from flask_moment import Moment
from flask_babel import Babel, lazy_gettext as _l
from elasticsearch import Elasticsearch
from redis import Redis
import rq
from config import Config
def create_app(config_class=Config):
    app = Flask(__name__)
    from app.errors import bp as errors_bp
    app.register_blueprint(errors_bp)
    from app.auth import bp as auth_bp
    app.register_blueprint(auth_bp, url_prefix='/auth')
    from app.main import bp as main_bp
    app.register_blueprint(main_bp)
    from app.cli import bp as cli_bp
    app.register_blueprint(cli_bp)
    from app.api import bp as api_bp
    app.register_blueprint(api_bp, url_prefix='/api')
from app import models
""",
    "app/auth/__init__.py": """from flask import Blueprint
bp = Blueprint('auth', __name__)
from app.auth import routes
""",
    "app/auth/routes.py": """from flask import render_template, redirect, url_for, flash, request
from urllib.parse import urlsplit
from flask_login import login_user, logout_user, current_user
from flask_babel import _
import sqlalchemy as sa
from app import db
from app.auth import bp
from app.models import User
from app.auth.email import send_password_reset_email
@bp.route('/login', methods=['GET', 'POST'])
def login():
    ...

@bp.route('/logout')
def logout():
    ...

@bp.route('/register', methods=['GET', 'POST'])
def register():
    ...

@bp.route('/reset_password_request', methods=['GET', 'POST'])
def reset_password_request():
    ...

@bp.route('/reset_password/<token>', methods=['GET', 'POST'])
def reset_password(token):
    ...

""",
    "app/main/__init__.py": """from flask import Blueprint
bp = Blueprint('main', __name__)
from app.main import routes
""",
    "app/main/routes.py": """from datetime import datetime, timezone
from flask_login import current_user, login_required
from flask_babel import _, get_locale
import sqlalchemy as sa
from langdetect import detect, LangDetectException
from app import db
from app.models import User, Post, Message, Notification
from app.translate import translate
from app.main import bp
@bp.route('/', methods=['GET', 'POST'])
@bp.route('/index', methods=['GET', 'POST'])
@login_required
def index():
    ...

@bp.route('/explore')
@login_required
def explore():
    ...

@bp.route('/user/<username>')
@login_required
def user(username):
    ...

@bp.route('/user/<username>/popup')
@login_required
def user_popup(username):
    ...

@bp.route('/edit_profile', methods=['GET', 'POST'])
@login_required
def edit_profile():
    ...

@bp.route('/follow/<username>', methods=['POST'])
@login_required
def follow(username):
    ...

@bp.route('/unfollow/<username>', methods=['POST'])
@login_required
def unfollow(username):
    ...

@bp.route('/translate', methods=['POST'])
@login_required
def translate_text():
    ...

@bp.route('/search')
@login_required
def search():
    ...

@bp.route('/send_message/<recipient>', methods=['GET', 'POST'])
@login_required
def send_message(recipient):
    ...

@bp.route('/messages')
@login_required
def messages():
    ...

@bp.route('/export_posts')
@login_required
def export_posts():
    ...

@bp.route('/notifications')
@login_required
def notifications():
    ...

""",
    "app/api/__init__.py": """from flask import Blueprint
bp = Blueprint('api', __name__)
from app.api import users, errors, tokens
""",
    "app/api/users.py": """import sqlalchemy as sa
from flask import request, url_for, abort
from app import db
from app.models import User
from app.api import bp
from app.api.auth import token_auth
from app.api.errors import bad_request
@bp.route('/users/<int:id>', methods=['GET'])
@token_auth.login_required
def get_user(id):
    ...

@bp.route('/users', methods=['GET'])
@token_auth.login_required
def get_users():
    ...

@bp.route('/users/<int:id>/followers', methods=['GET'])
@token_auth.login_required
def get_followers(id):
    ...

@bp.route('/users/<int:id>/following', methods=['GET'])
@token_auth.login_required
def get_following(id):
    ...

@bp.route('/users', methods=['POST'])
def create_user():
    ...

@bp.route('/users/<int:id>', methods=['PUT'])
@token_auth.login_required
def update_user(id):
    ...

""",
    "app/api/tokens.py": """from app import db
from app.api import bp
from app.api.auth import basic_auth, token_auth
@bp.route('/tokens', methods=['POST'])
@basic_auth.login_required
def get_token():
    ...

@bp.route('/tokens', methods=['DELETE'])
@token_auth.login_required
def revoke_token():
    ...

""",
    "app/errors/__init__.py": """from flask import Blueprint
bp = Blueprint('errors', __name__)
from app.errors import handlers
""",
    "app/cli.py": """import os
from flask import Blueprint
import click
bp = Blueprint('cli', __name__, cli_group=None)
""",
}

FASTAPI_TEMPLATE = {
    "pyproject.toml": '[project]\nname = "app"\ndependencies = ["fastapi[standard]<1.0.0"]\n',
    "app/main.py": """from fastapi import FastAPI
from fastapi.routing import APIRoute

from app.api.main import api_router
from app.core.config import settings

app = FastAPI(
    title=settings.PROJECT_NAME,
    openapi_url=f"{settings.API_V1_STR}/openapi.json",
    generate_unique_id_function=custom_generate_unique_id,
)

app.include_router(api_router, prefix=settings.API_V1_STR)
""",
    "app/api/main.py": """from fastapi import APIRouter

from app.api.routes import items, login, private, users, utils
from app.core.config import settings

api_router = APIRouter()
api_router.include_router(login.router)
api_router.include_router(users.router)
api_router.include_router(utils.router)
api_router.include_router(items.router)


if settings.FASTAPI_ENV == "development":
    api_router.include_router(private.router)
""",
    "app/core/config.py": """from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    API_V1_STR: str = "/api/v1"
    PROJECT_NAME: str


settings = Settings()  # type: ignore
""",
    "app/api/routes/items.py": """import uuid
from typing import Any

from fastapi import APIRouter, HTTPException

router = APIRouter(prefix="/items", tags=["items"])


@router.get("/", response_model=ItemsPublic)
def read_items(
    session: SessionDep, current_user: CurrentUser, skip: int = 0, limit: int = 100
) -> Any:
    ...


@router.get("/{id}", response_model=ItemPublic)
def read_item(session: SessionDep, current_user: CurrentUser, id: uuid.UUID) -> Any:
    ...


@router.post("/", response_model=ItemPublic)
def create_item(
    *, session: SessionDep, current_user: CurrentUser, item_in: ItemCreate
) -> Any:
    ...


@router.delete("/{id}")
def delete_item(
    session: SessionDep, current_user: CurrentUser, id: uuid.UUID
) -> Message:
    ...
""",
    "app/api/routes/login.py": """from fastapi import APIRouter, Depends, HTTPException

router = APIRouter(tags=["login"])


@router.post("/login/access-token")
def login_access_token(
    session: SessionDep, form_data: Annotated[OAuth2PasswordRequestForm, Depends()]
) -> Token:
    ...
""",
    "app/api/routes/private.py": """from fastapi import APIRouter

router = APIRouter(tags=["private"], prefix="/private")


@router.post("/users/", response_model=UserPublic)
def create_user(user_in: PrivateUserCreate, session: SessionDep) -> Any:
    ...
""",
    "app/api/routes/users.py": """from fastapi import APIRouter, Depends, HTTPException

router = APIRouter(prefix="/users", tags=["users"])


@router.get(
    "/",
    dependencies=[Depends(get_current_active_superuser)],
    response_model=UsersPublic,
)
def read_users(session: SessionDep, skip: int = 0, limit: int = 100) -> Any:
    ...


@router.post("/signup", response_model=UserPublic)
def register_user(session: SessionDep, user_in: UserRegister) -> Any:
    ...
""",
    "app/api/routes/utils.py": """from fastapi import APIRouter, Depends

router = APIRouter(prefix="/utils", tags=["utils"])


@router.get("/health-check/")
async def health_check() -> bool:
    ...
""",
}

EXPRESS_MULTI_ROUTER = {
    "package.json": '{"name": "multi-router", "dependencies": {"express": "^5.0.0"}}\n',
    "index.js": """'use strict'

var express = require('../..');

var app = module.exports = express();

app.use('/api/v1', require('./controllers/api_v1'));
app.use('/api/v2', require('./controllers/api_v2'));

app.get('/', function(req, res) {
  res.send('Hello from root route.')
});
""",
    "controllers/api_v1.js": """'use strict'

var express = require('../../..');

var apiv1 = express.Router();

apiv1.get('/', function(req, res) {
  res.send('Hello from APIv1 root route.');
});

apiv1.get('/users', function(req, res) {
  res.send('List of APIv1 users.');
});

module.exports = apiv1;
""",
    "controllers/api_v2.js": """'use strict'

var express = require('../../..');

var apiv2 = express.Router();

apiv2.get('/', function(req, res) {
  res.send('Hello from APIv2 root route.');
});

apiv2.get('/users', function(req, res) {
  res.send('List of APIv2 users.');
});

module.exports = apiv2;
""",
}

DJANGOX = {
    "requirements.txt": "Django==5.1.2\ndjango-allauth==65.0.2\n",
    "manage.py": "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'django_project.settings')\n",
    "django_project/settings.py": 'ROOT_URLCONF = "django_project.urls"\n',
    "django_project/urls.py": """from django.conf import settings
from django.contrib import admin
from django.urls import path, include

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("", include("pages.urls")),
]
""",
    "pages/urls.py": """from django.urls import path

from .views import HomePageView, AboutPageView

urlpatterns = [
    path("", HomePageView.as_view(), name="home"),
    path("about/", AboutPageView.as_view(), name="about"),
]
""",
    "pages/views.py": """from django.views.generic import TemplateView


class HomePageView(TemplateView):
    template_name = "pages/home.html"


class AboutPageView(TemplateView):
    template_name = "pages/about.html"
""",
}

_ALLAUTH = {
    (method, "/accounts/" + sub)
    for sub in ("login/", "signup/", "logout/", "password/reset/")
    for method in ("GET", "POST")
}

ROUTES_REAL = {
    "microblog": {
        *(("GET", r) for r in ("/auth/login", "/auth/logout", "/auth/register")),
        *(("POST", r) for r in ("/auth/login", "/auth/register")),
        *(("GET", r) for r in ("/auth/reset_password_request", "/auth/reset_password/{token}")),
        *(("POST", r) for r in ("/auth/reset_password_request", "/auth/reset_password/{token}")),
        *(("GET", r) for r in ("/", "/index", "/explore", "/user/{username}")),
        *(("GET", r) for r in ("/user/{username}/popup", "/edit_profile", "/search")),
        *(("GET", r) for r in ("/send_message/{recipient}", "/messages", "/export_posts")),
        ("GET", "/notifications"),
        *(("POST", r) for r in ("/", "/index", "/edit_profile", "/follow/{username}")),
        *(("POST", r) for r in ("/unfollow/{username}", "/translate")),
        ("POST", "/send_message/{recipient}"),
        *(("GET", r) for r in ("/api/users/{id}", "/api/users")),
        *(("GET", r) for r in ("/api/users/{id}/followers", "/api/users/{id}/following")),
        ("POST", "/api/users"),
        ("PUT", "/api/users/{id}"),
        ("POST", "/api/tokens"),
        ("DELETE", "/api/tokens"),
    },
    "fastapi_template": {
        # FastAPI's own pages (fastapi/applications.py defaults); its openapi_url is an
        # f-string: not guessed.
        ("GET", "/docs"),
        ("GET", "/redoc"),
        ("GET", "/api/v1/items/"),
        ("GET", "/api/v1/items/{id}"),
        ("POST", "/api/v1/items/"),
        ("DELETE", "/api/v1/items/{id}"),
        ("POST", "/api/v1/login/access-token"),
        ("POST", "/api/v1/private/users/"),
        ("GET", "/api/v1/users/"),
        ("POST", "/api/v1/users/signup"),
        ("GET", "/api/v1/utils/health-check/"),
    },
    "express_multi_router": {
        ("GET", "/"),
        ("GET", "/api/v1"),
        ("GET", "/api/v1/users"),
        ("GET", "/api/v2"),
        ("GET", "/api/v2/users"),
    },
    "djangox": {("GET", "/"), ("GET", "/about/"), ("GET", "/admin/"), *_ALLAUTH},
}

LAYOUTS_REAL = {
    "microblog": MICROBLOG,
    "fastapi_template": FASTAPI_TEMPLATE,
    "express_multi_router": EXPRESS_MULTI_ROUTER,
    "djangox": DJANGOX,
}
