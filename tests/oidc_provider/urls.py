import json
import os

from django.contrib.auth import views as auth_views
from django.contrib.auth.models import Group, User
from django.http import HttpResponse, HttpResponseForbidden, JsonResponse
from django.urls import include, path
from django.utils.crypto import constant_time_compare
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from tests.oidc_provider import CONTROL_HEADER


@csrf_exempt
@require_POST
def directory(request, username):
    """The test's hand on the provider's directory: create or change a user and their groups
    (what an identity team does in the provider's console). Only with the control token."""
    if not constant_time_compare(
        request.headers.get(CONTROL_HEADER, ""), os.environ["PROVIDER_CONTROL"]
    ):
        return HttpResponseForbidden()
    body = json.loads(request.body)
    user, _ = User.objects.get_or_create(username=username)
    user.email = body.get("email", user.email)
    user.first_name = body.get("given_name", user.first_name)
    if "password" in body and not user.check_password(body["password"]):
        # A new hash would end the user's sessions at the provider: only when it changes.
        user.set_password(body["password"])
    user.save()
    user.groups.set(Group.objects.get_or_create(name=name)[0] for name in body.get("groups", []))
    return JsonResponse({"sub": str(user.pk)})


def home(request):
    return HttpResponse(f"provider home: {request.user.username or 'signed out'}")


urlpatterns = [
    path("", home),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("directory/<str:username>", directory),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
