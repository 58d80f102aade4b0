"""The management API's resources (SPEC R-MGT-1), mounted by gateway/urls.py under
`/api/v1/workspaces/<slug:ws>/` (no trailing slashes, like `/v1`): keys (with the
settings, budget and limits of each key's name), BYOK credentials, presets, routes with
their versions, budgets, rate limits, the policy, the request log and the audit log."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from management_api.audit_views import AuditLogView
from management_api.budget_views import BudgetViewSet, RateLimitView
from management_api.policy_views import PolicyView
from management_api.preset_views import ApiKeyWithSettingsViewSet, PresetViewSet
from management_api.route_views import RouteViewSet
from management_api.tenancy_views import CredentialViewSet
from management_api.trace_views import TraceDetailView, TraceListView

router = SimpleRouter(trailing_slash=False)
router.register("credentials", CredentialViewSet, basename="credential")
router.register("keys", ApiKeyWithSettingsViewSet, basename="api-key")
router.register("presets", PresetViewSet, basename="preset")
router.register("routes", RouteViewSet, basename="route")
router.register("budgets", BudgetViewSet, basename="budget")

# One resource per workspace, replaced whole by PUT: not a collection of the router's.
urlpatterns = [
    *router.urls,
    path("limits", RateLimitView.as_view(), name="rate-limits"),
    path("policy", PolicyView.as_view(), name="policy"),
    path("traces", TraceListView.as_view(), name="traces"),
    path("traces/<str:trace_id>", TraceDetailView.as_view(), name="trace-detail"),
    path("audit", AuditLogView.as_view(), name="audit-log"),
]
