"""Sample Python web repositories (path → contents): Django (+ DRF), Flask, FastAPI."""

DJANGO = {
    "README.md": "# Acme Blog\n\nDjango 5 blog with a REST API. `python manage.py runserver`.\n",
    "requirements.txt": "Django==5.0.6\ndjangorestframework==3.15.1\ngunicorn==22.0.0\n",
    "manage.py": """#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
""",
    "mysite/__init__.py": "",
    "mysite/settings.py": """SECRET_KEY = "dev-only"
INSTALLED_APPS = ["django.contrib.admin", "rest_framework", "blog", "api"]
ROOT_URLCONF = "mysite.urls"
""",
    "mysite/urls.py": """from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("blog/", include("blog.urls")),
    path("api/", include("api.urls")),
]
""",
    "mysite/wsgi.py": "from django.core.wsgi import get_wsgi_application\napplication = get_wsgi_application()\n",
    "blog/__init__.py": "",
    "blog/urls.py": """from django.urls import path, re_path

from . import views

app_name = "blog"
urlpatterns = [
    path("", views.index, name="index"),
    path("<int:pk>/", views.detail, name="detail"),
    path("about/", views.about, name="about"),
    re_path(r"^archive/(?P<year>[0-9]{4})/$", views.archive, name="archive"),
]
""",
    "blog/views.py": """from django.shortcuts import get_object_or_404, render

from .models import Post


def index(request):
    return render(request, "blog/index.html", {"posts": Post.objects.all()})


def detail(request, pk):
    return render(request, "blog/detail.html", {"post": get_object_or_404(Post, pk=pk)})


def about(request):
    return render(request, "blog/about.html")


def archive(request, year):
    return render(request, "blog/index.html", {"posts": Post.objects.filter(year=year)})
""",
    "blog/models.py": "from django.db import models\n\n\nclass Post(models.Model):\n    title = models.CharField(max_length=200)\n",
    "api/__init__.py": "",
    "api/urls.py": """from django.urls import include, path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register(r"articles", views.ArticleViewSet)

urlpatterns = [
    path("", include(router.urls)),
    path("health/", views.health),
]
""",
    "api/views.py": """from django.http import JsonResponse
from rest_framework import viewsets


class ArticleViewSet(viewsets.ModelViewSet):
    pass


def health(request):
    return JsonResponse({"ok": True})
""",
    "blog/templates/blog/index.html": "<h1>Acme Blog</h1>\n",
}

FLASK = {
    "README.md": "# Acme Inventory\n\nFlask app: `flask --app app run` (port 5000).\n",
    "requirements.txt": "Flask==3.0.3\nFlask-Login==0.6.3\n",
    "wsgi.py": "from app import create_app\n\napp = create_app()\n",
    "app/__init__.py": """from flask import Flask, render_template

from . import api
from .auth import bp as auth_bp


def create_app():
    app = Flask(__name__)

    @app.route("/")
    def index():
        return render_template("index.html")

    app.register_blueprint(auth_bp, url_prefix="/auth")
    app.register_blueprint(api.bp, url_prefix="/api")
    return app
""",
    "app/auth.py": """from flask import Blueprint, render_template

bp = Blueprint("auth", __name__)


@bp.route("/login", methods=["GET", "POST"])
def login():
    return render_template("login.html")


@bp.route("/logout")
def logout():
    return render_template("logout.html")
""",
    "app/api.py": """from flask import Blueprint, jsonify, request

bp = Blueprint("api", __name__)
ITEMS = [{"id": 1, "name": "bolt"}]


@bp.get("/items")
def list_items():
    return jsonify(ITEMS)


@bp.post("/items")
def create_item():
    data = request.get_json(silent=True) or {}
    if "name" not in data:
        return jsonify(error="name is required"), 400
    return jsonify(data), 201


@bp.route("/items/<int:item_id>", methods=["GET", "DELETE"])
def item(item_id):
    return jsonify(next((i for i in ITEMS if i["id"] == item_id), {})), 200
""",
    "app/templates/index.html": "<h1>Inventory</h1>\n",
    "app/templates/login.html": "<h1>Sign in</h1>\n",
    "tests/test_api.py": "def test_items(client):\n    assert client.get('/api/items').status_code == 200\n",
}

FASTAPI = {
    "README.md": "# Acme Catalog API\n\nFastAPI service. `uvicorn app.main:app --reload` (port 8000).\n",
    "requirements.txt": "fastapi==0.111.0\nuvicorn[standard]==0.30.1\npydantic==2.7.4\n",
    "Dockerfile": 'FROM python:3.12-slim\nCOPY . /srv\nCMD ["uvicorn", "app.main:app", "--host", "0.0.0.0"]\n',
    "app/__init__.py": "",
    "app/main.py": """from fastapi import FastAPI

from app.routers import items
from app.routers.users import router as users_router

app = FastAPI(title="Acme Catalog")
app.include_router(items.router, prefix="/api")
app.include_router(users_router)


@app.get("/health")
def health() -> dict:
    return {"status": "ok"}
""",
    "app/routers/__init__.py": "",
    "app/routers/items.py": """from fastapi import APIRouter, HTTPException

from app.models import Item

router = APIRouter(prefix="/items", tags=["items"])
ITEMS: dict[int, Item] = {}


@router.get("/")
def list_items() -> list[Item]:
    return list(ITEMS.values())


@router.get("/{item_id}")
def get_item(item_id: int) -> Item:
    if item_id not in ITEMS:
        raise HTTPException(status_code=404, detail="Item not found")
    return ITEMS[item_id]


@router.post("/", status_code=201)
def create_item(item: Item) -> Item:
    ITEMS[item.id] = item
    return item


@router.put("/{item_id}")
def replace_item(item_id: int, item: Item) -> Item:
    ITEMS[item_id] = item
    return item
""",
    "app/routers/users.py": """from fastapi import APIRouter

router = APIRouter(prefix="/users", tags=["users"])


@router.get("/me")
def me() -> dict:
    return {"name": "anonymous"}


@router.get("/{user_id}")
def user(user_id: int) -> dict:
    return {"id": user_id}
""",
    "app/models.py": "from pydantic import BaseModel\n\n\nclass Item(BaseModel):\n    id: int\n    name: str\n",
    "tests/test_health.py": "def test_health():\n    assert True\n",
}
