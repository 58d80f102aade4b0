"""The presets app's resources of the management API, mounted by gateway/urls.py under
`/api/v1/workspaces/<slug:ws>/` (no trailing slashes, like `/v1`): presets, routes with
their versions, budgets and rate limits, the policy, and `keys` — workspaces' keys resource extended
with the settings, budget and limits of each key's name
(presets.views.ApiKeyWithSettingsViewSet), registered here in its place."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from presets.budget_views import BudgetViewSet, RateLimitView
from presets.policy_views import PolicyView
from presets.views import ApiKeyWithSettingsViewSet, PresetViewSet, RouteViewSet

router = SimpleRouter(trailing_slash=False)
router.register("keys", ApiKeyWithSettingsViewSet, basename="api-key")
router.register("presets", PresetViewSet, basename="preset")
router.register("routes", RouteViewSet, basename="route")
router.register("budgets", BudgetViewSet, basename="budget")

# One resource per workspace, replaced whole by PUT: not a collection of the router's.
urlpatterns = [
    *router.urls,
    path("limits", RateLimitView.as_view(), name="rate-limits"),
    path("policy", PolicyView.as_view(), name="policy"),
]
