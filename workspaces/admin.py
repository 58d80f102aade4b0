"""Console pages for tenancy. Secrets are never displayed: keys show their prefix only,
credentials show their provider and key id, never ciphertext or plaintext."""

from django.contrib import admin

from workspaces.models import ApiKey, Membership, Policy, ProviderCredential, Workspace


class PolicyInline(admin.StackedInline):
    model = Policy
    extra = 0


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")
    inlines = [PolicyInline, MembershipInline]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "name", "workspace", "created_at", "expires_at", "revoked_at")
    list_filter = ("workspace",)
    search_fields = ("lookup_id", "name")
    # Keys are created with `manage.py createkey` (shown once); the console only revokes.
    fields = ("workspace", "name", "prefix", "created_at", "expires_at", "revoked_at")
    readonly_fields = ("workspace", "prefix", "created_at")

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(admin.ModelAdmin):
    list_display = ("workspace", "provider_slug", "key_id", "updated_at")
    list_filter = ("provider_slug",)
    fields = ("workspace", "provider_slug", "key_id", "allowed_models", "api_keys",
              "managed_fallback", "created_at", "updated_at")  # fmt: skip
    readonly_fields = ("workspace", "provider_slug", "key_id", "created_at", "updated_at")

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False  # written through `manage.py apply` so the key is sealed, never shown
