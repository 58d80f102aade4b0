"""URL map: the OpenAI-compatible /v1 API with Anthropic's Messages API beside it, health,
metrics and the admin console.

No `handler404`: an unknown path, like a wrong method, gets Django's own error response,
which `gateway.middleware` turns into the API's JSON envelope (the console keeps its HTML).
APPEND_SLASH never redirects an API path: those are served without CommonMiddleware
(gateway/asgi.py), and no API route ends with a slash anyway. A trailing slash is a 404
like any other unknown path."""

from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.views import serve as serve_static
from django.urls import include, path, re_path

from gateway.api import openapi, views
from gateway.api.readiness import healthz

urlpatterns = [
    path("v1/chat/completions", views.chat_completions),
    path("v1/responses", views.responses),
    path("v1/embeddings", views.embeddings),
    path("v1/messages", views.messages),
    path("v1/messages/count_tokens", views.count_tokens),
    path("v1/models", views.models),
    path("v1/models/<path:model_id>", views.model_detail),
    path("v1/traces/<str:trace_id>", views.trace_detail),
    path("v1/routing/explain", views.explain),
    path("v1/openapi.json", openapi.openapi_json),
    path("health", views.health),
    path("healthz", healthz),
    path("", include("django_prometheus.urls")),
    path("admin/", admin.site.urls),
]

if settings.SERVE_STATIC:
    # The console's CSS/JS straight from the app folders: fine for one node and the demo;
    # behind a proxy, run `collectstatic` and set SWITCHYARD_SERVE_STATIC=false.
    urlpatterns.append(re_path(r"^static/(?P<path>.*)$", serve_static, {"insecure": True}))
