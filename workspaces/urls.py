"""The workspace resources of the management API, mounted by gateway/urls.py under
`/api/v1/workspaces/<slug:ws>/` (no trailing slashes, like `/v1`)."""

from rest_framework.routers import SimpleRouter

from workspaces.views import ApiKeyViewSet

router = SimpleRouter(trailing_slash=False)
router.register("keys", ApiKeyViewSet, basename="api-key")

urlpatterns = router.urls
