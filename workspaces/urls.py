"""The workspace resources of the management API, mounted by gateway/urls.py under
`/api/v1/workspaces/<slug:ws>/` (no trailing slashes, like `/v1`): `credentials`.

`keys` (workspaces.views.ApiKeyViewSet) is not registered here: presets/urls.py registers
its subclass, which adds the key settings stored in presets (workspaces may not import
presets), under the same prefix and basename."""

from rest_framework.routers import SimpleRouter

from workspaces.views import CredentialViewSet

router = SimpleRouter(trailing_slash=False)
router.register("credentials", CredentialViewSet, basename="credential")

urlpatterns = router.urls
