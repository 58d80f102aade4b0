"""Console pages for the catalog. Managed provider credentials are never displayed."""

from django.contrib import admin

from routing.models import Endpoint, Model, Provider, VirtualModel


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "api_style", "base_url", "has_credential")
    fields = ("slug", "name", "api_style", "base_url", "credential_key_id")
    readonly_fields = ("credential_key_id",)

    @admin.display(boolean=True)
    def has_credential(self, obj: Provider) -> bool:
        return bool(obj.credential_ciphertext)


@admin.register(Model)
class ModelAdmin(admin.ModelAdmin):
    list_display = ("slug", "context_window", "parameters_b", "version")
    search_fields = ("slug",)


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "provider",
        "model",
        "region",
        "status",
        "sovereignty_class",
        "price_input",
        "price_output",
        "partner",
    )
    list_filter = ("status", "sovereignty_class", "provider", "region")
    search_fields = ("id", "upstream_model")


@admin.register(VirtualModel)
class VirtualModelAdmin(admin.ModelAdmin):
    list_display = ("slug", "strategy")
