"""Console pages for tenancy. Secrets are never displayed: keys show their prefix only,
credentials show their provider and key id, never ciphertext or plaintext."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from workspaces.models import (
    ApiKey,
    ManagementToken,
    Membership,
    Policy,
    ProviderCredential,
    Workspace,
)
from workspaces.services import revoke_management_token


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
    fields = (
        "workspace",
        "provider_slug",
        "key_id",
        "allowed_models",
        "api_keys",
        "managed_fallback",
        "created_at",
        "updated_at",
    )
    readonly_fields = ("workspace", "provider_slug", "key_id", "created_at", "updated_at")

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False  # written through `manage.py apply` so the key is sealed, never shown


@admin.register(ManagementToken)
class ManagementTokenAdmin(admin.ModelAdmin):
    list_display = (
        "prefix",
        "name",
        "workspace",
        "role",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("workspace", "role")
    search_fields = ("lookup_id", "name")
    # Tokens are created with `manage.py createtoken` (shown once); here they are revoked.
    fields = ("workspace", "name", "role", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    actions = ("revoke",)

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False  # revoke instead: the audit log keeps naming the token

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ManagementToken]) -> None:
        actor = request.user.get_username()
        revoked = sum(revoke_management_token(token, actor=actor) for token in queryset)
        self.message_user(request, f"revoked {revoked} token(s)")
