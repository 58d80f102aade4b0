"""The presets app's resources of the management API, mounted by gateway/urls.py under
`/api/v1/workspaces/<slug:ws>/` (no trailing slashes, like `/v1`): presets, routes with
their versions, and `keys` — workspaces' keys resource extended with the settings of each
key's name (presets.views.ApiKeyWithSettingsViewSet), registered here in its place."""

from rest_framework.routers import SimpleRouter

from presets.views import ApiKeyWithSettingsViewSet, PresetViewSet, RouteViewSet

router = SimpleRouter(trailing_slash=False)
router.register("keys", ApiKeyWithSettingsViewSet, basename="api-key")
router.register("presets", PresetViewSet, basename="preset")
router.register("routes", RouteViewSet, basename="route")

urlpatterns = router.urls
