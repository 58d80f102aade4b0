"""Console pages for traces and admin events (read-only: the log is not editable)."""

from django.contrib import admin

from audit.models import AdminEvent, RequestTrace


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(RequestTrace)
class RequestTraceAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "created_at",
        "workspace",
        "requested_model",
        "model",
        "provider",
        "status_code",
        "latency_ms",
        "cost_micros",
    )
    list_filter = ("status_code", "provider", "operation")
    search_fields = ("id", "request_id", "requested_model")


@admin.register(AdminEvent)
class AdminEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "actor", "action", "target", "workspace")
    list_filter = ("action",)
