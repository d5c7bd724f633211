"""Python route layouts as the frameworks define them (path → contents), with the routes each
must yield in `ROUTES_PY`.

FLASKR is an excerpt of the Flask tutorial app, `examples/tutorial/flaskr` of the flask 3.0.3
sdist on PyPI (`pip download flask==3.0.3 --no-binary :all:`), licensed BSD-3-Clause,
"Copyright 2010 Pallets" (examples/tutorial/LICENSE.rst). The module-level structure, blueprint
definitions, decorators and registrations are verbatim; view bodies and docstrings are cut.
The other layouts are written for these tests.
"""

_FLASKR_INIT = '''import os

from flask import Flask


def create_app(test_config=None):
    """Create and configure an instance of the Flask application."""
    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(
        SECRET_KEY="dev",
        DATABASE=os.path.join(app.instance_path, "flaskr.sqlite"),
    )

    @app.route("/hello")
    def hello():
        return "Hello, World!"

    # register the database commands
    from . import db

    db.init_app(app)

    # apply the blueprints to the app
    from . import auth
    from . import blog

    app.register_blueprint(auth.bp)
    app.register_blueprint(blog.bp)

    # make url_for('index') == url_for('blog.index')
    app.add_url_rule("/", endpoint="index")

    return app
'''

_FLASKR_AUTH = '''import functools

from flask import Blueprint
from flask import g
from flask import redirect
from flask import render_template
from flask import url_for

bp = Blueprint("auth", __name__, url_prefix="/auth")


def login_required(view):
    """View decorator that redirects anonymous users to the login page."""

    @functools.wraps(view)
    def wrapped_view(**kwargs):
        if g.user is None:
            return redirect(url_for("auth.login"))

        return view(**kwargs)

    return wrapped_view


@bp.route("/register", methods=("GET", "POST"))
def register():
    return render_template("auth/register.html")


@bp.route("/login", methods=("GET", "POST"))
def login():
    return render_template("auth/login.html")


@bp.route("/logout")
def logout():
    return redirect(url_for("index"))
'''

_FLASKR_BLOG = """from flask import Blueprint
from flask import redirect
from flask import render_template
from flask import url_for

from .auth import login_required
from .db import get_db

bp = Blueprint("blog", __name__)


@bp.route("/")
def index():
    return render_template("blog/index.html", posts=get_db().execute("SELECT 1").fetchall())


@bp.route("/create", methods=("GET", "POST"))
@login_required
def create():
    return render_template("blog/create.html")


@bp.route("/<int:id>/update", methods=("GET", "POST"))
@login_required
def update(id):
    return render_template("blog/update.html")


@bp.route("/<int:id>/delete", methods=("POST",))
@login_required
def delete(id):
    return redirect(url_for("blog.index"))
"""

FLASKR = {
    "pyproject.toml": '[project]\nname = "flaskr"\nversion = "1.0.0"\ndependencies = [\n'
    '    "flask",\n]\n',
    "flaskr/__init__.py": _FLASKR_INIT,
    "flaskr/auth.py": _FLASKR_AUTH,
    "flaskr/blog.py": _FLASKR_BLOG,
    "flaskr/db.py": "import sqlite3\n\n\ndef get_db():\n    return sqlite3.connect(':memory:')\n"
    "\n\ndef init_app(app):\n    pass\n",
    "flaskr/templates/blog/index.html": "<h1>Posts</h1>\n",
    "tests/test_blog.py": "def test_index(client):\n    assert client.get('/').status_code == 200\n",
}

# Nested blueprints, prefixes given at registration, add_url_rule with view_func, @bp.get.
FLASK_NESTED = {
    "requirements.txt": "Flask==3.0.3\n",
    "shop/__init__.py": """from flask import Flask

from shop.admin import admin
from shop.api import api_bp


def create_app():
    app = Flask(__name__)
    app.register_blueprint(api_bp, url_prefix="/api/v1")
    app.register_blueprint(admin)
    return app
""",
    "shop/api/__init__.py": """from flask import Blueprint

from .orders import orders

api_bp = Blueprint("api", __name__, url_prefix="/api")
api_bp.register_blueprint(orders, url_prefix="/orders")


@api_bp.get("/status")
def status():
    return {"ok": True}
""",
    "shop/api/orders.py": """from flask import Blueprint, jsonify
from flask.views import MethodView

orders = Blueprint("orders", __name__, url_prefix="/ignored")


class OrderAPI(MethodView):
    def get(self, order_id):
        return jsonify({"id": order_id})


@orders.get("/")
def list_orders():
    return jsonify([])


@orders.post("/")
def create_order():
    return jsonify({}), 201


orders.add_url_rule("/<int:order_id>", view_func=OrderAPI.as_view("order"), methods=["GET", "PATCH"])
""",
    "shop/admin.py": """from flask import Blueprint, render_template

admin = Blueprint("admin", __name__, url_prefix="/admin")


def dashboard():
    return render_template("admin.html")


admin.add_url_rule("/", "dashboard", dashboard)
admin.add_url_rule("/reports", view_func=dashboard, methods=("GET", "POST"))
""",
}

DJANGO_INCLUDES = {
    "requirements.txt": "Django==5.0.6\n",
    "manage.py": "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'site_cfg.settings')\n",
    "site_cfg/settings.py": "ROOT_URLCONF = 'site_cfg.urls'\n",
    "site_cfg/urls.py": """from django.urls import include, path

from shop import urls as shop_urls

urlpatterns = [
    path("", include("pages.urls")),
    path("shop/", include((shop_urls, "shop"), namespace="shop")),
    path("accounts/", include("accounts.urls", namespace="accounts")),
]
""",
    "pages/urls.py": """from django.urls import path
from django.views.generic import TemplateView

from .views import HomeView

urlpatterns = [
    path("", HomeView.as_view(), name="home"),
    path("about/", TemplateView.as_view(template_name="about.html"), name="about"),
]
""",
    "pages/views.py": """from django.views.generic import TemplateView


class HomeView(TemplateView):
    template_name = "home.html"
""",
    "shop/urls.py": """from django.urls import include, path, re_path

from . import views

app_name = "shop"
product_patterns = [
    path("", views.ProductList.as_view(), name="list"),
    path("<slug:slug>/", views.ProductDetail.as_view(), name="detail"),
]
urlpatterns = [
    path("products/", include(product_patterns)),
    path("cart/", include([path("", views.cart), path("checkout/", views.CheckoutView.as_view())])),
    re_path(r"^orders/(?P<number>[0-9]+)/$", views.order, name="order"),
]
""",
    "shop/views.py": """from django.views import View
from django.views.generic import DetailView, FormView, ListView


class ProductList(ListView):
    pass


class ProductDetail(DetailView):
    pass


class CheckoutView(FormView):
    pass


def cart(request):
    pass


def order(request, number):
    pass
""",
    "accounts/urls.py": """from django.urls import path

from .views import SignupView

app_name = "accounts"
urlpatterns = [path("signup/", SignupView.as_view(), name="signup")]
""",
    "accounts/views.py": """from django.views import View


class SignupView(View):
    def get(self, request):
        pass

    def post(self, request):
        pass
""",
}

FASTAPI_NESTED = {
    "requirements.txt": "fastapi==0.111.0\n",
    "svc/main.py": """from fastapi import FastAPI

from svc.api import api_router

app = FastAPI()
app.include_router(api_router, prefix="/api")
""",
    "svc/api.py": """from fastapi import APIRouter

from svc.routes import notes

api_router = APIRouter(prefix="/v1")
api_router.include_router(notes.router, prefix="/notes", tags=["notes"])
""",
    "svc/routes/notes.py": """from fastapi import APIRouter

router = APIRouter()


@router.get("/")
def list_notes():
    return []


@router.delete("/{note_id}")
def delete_note(note_id: int):
    return None
""",
}

ROUTES_PY = {
    "flaskr": {
        ("GET", "/"),
        ("GET", "/hello"),
        ("GET", "/auth/register"),
        ("POST", "/auth/register"),
        ("GET", "/auth/login"),
        ("POST", "/auth/login"),
        ("GET", "/auth/logout"),
        ("GET", "/create"),
        ("POST", "/create"),
        ("GET", "/{id}/update"),
        ("POST", "/{id}/update"),
        ("POST", "/{id}/delete"),
    },
    "flask_nested": {
        ("GET", "/api/v1/status"),
        ("GET", "/api/v1/orders/"),
        ("POST", "/api/v1/orders/"),
        ("GET", "/api/v1/orders/{order_id}"),
        ("PATCH", "/api/v1/orders/{order_id}"),
        ("GET", "/admin/"),
        ("GET", "/admin/reports"),
        ("POST", "/admin/reports"),
    },
    "django_includes": {
        ("GET", "/"),
        ("GET", "/about/"),
        ("GET", "/shop/products/"),
        ("GET", "/shop/products/{slug}/"),
        ("GET", "/shop/cart/"),
        ("GET", "/shop/cart/checkout/"),
        ("POST", "/shop/cart/checkout/"),
        ("GET", "/shop/orders/{number}/"),
        ("GET", "/accounts/signup/"),
        ("POST", "/accounts/signup/"),
    },
    "fastapi_nested": {
        ("GET", "/api/v1/notes/"),
        ("DELETE", "/api/v1/notes/{note_id}"),
        # What FastAPI() serves unless told otherwise (fastapi/applications.py).
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("GET", "/redoc"),
    },
}

LAYOUTS_PY = {
    "flaskr": FLASKR,
    "flask_nested": FLASK_NESTED,
    "django_includes": DJANGO_INCLUDES,
    "fastapi_nested": FASTAPI_NESTED,
}
