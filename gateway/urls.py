"""URL map: the OpenAI-compatible /v1 API with Anthropic's Messages API beside it, health,
metrics, the management API (/api/v1/, its OpenAPI schema at /api/v1/schema/), the
workspace console (/console/) and the operators' Django admin (/admin/).

No `handler404`: an unknown path, like a wrong method, gets Django's own error response,
which `gateway.middleware` turns into the API's JSON envelope (the console keeps its HTML).
APPEND_SLASH never redirects an API path: those are served without CommonMiddleware
(gateway/asgi.py), and no API route ends with a slash anyway. A trailing slash is a 404
like any other unknown path."""

from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.views import serve as serve_static
from django.urls import include, path, re_path
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.views import SpectacularAPIView

from gateway.api import openapi, views
from gateway.api.readiness import healthz, livez, readyz

# The management API (SPEC R-MGT-1; management_api/urls.py): every resource lives under
# /api/v1/workspaces/{ws}/. Served by the full Django stack (sessions, CSRF) because
# /api/v1/ is not one of gateway/asgi.py's API_PREFIXES.
management_routes = [path("api/v1/workspaces/<slug:ws>/", include("management_api.urls"))]
management_schema = SpectacularAPIView.as_view(
    patterns=management_routes,  # only /api/v1: /v1 is described at /v1/openapi.json
    renderer_classes=[OpenApiJsonRenderer, OpenApiYamlRenderer],  # ?format=yaml for YAML
    custom_settings={
        "TITLE": "Switchyard management API",
        "DESCRIPTION": "Workspaces, keys and their configuration (docs/management-api.md).",
        "VERSION": "1",
        "COMPONENT_SPLIT_REQUEST": True,  # `ApiKey` (response) vs `ApiKeyRequest` (body)
    },
)

urlpatterns = [
    path("v1/chat/completions", views.chat_completions),
    path("v1/responses", views.responses),
    path("v1/embeddings", views.embeddings),
    path("v1/messages", views.messages),
    path("v1/messages/count_tokens", views.count_tokens),
    path("v1/models", views.models),
    path("v1/models/<path:model_id>", views.model_detail),
    path("v1/traces", views.trace_list),
    path("v1/traces/<str:trace_id>", views.trace_detail),
    path("v1/routing/explain", views.explain),
    path("v1/openapi.json", openapi.openapi_json),
    path("health", views.health),
    path("healthz", healthz),
    path("livez", livez),
    path("readyz", readyz),
    path("", include("django_prometheus.urls")),
    *management_routes,
    path("api/v1/schema/", management_schema, name="management-api-schema"),
    path("console/", include("console.urls")),
    path("admin/", admin.site.urls),
]

if settings.SERVE_STATIC:
    # The console's CSS/JS straight from the app folders: fine for one node and the demo;
    # behind a proxy, run `collectstatic` and set SWITCHYARD_SERVE_STATIC=false.
    urlpatterns.append(re_path(r"^static/(?P<path>.*)$", serve_static, {"insecure": True}))
