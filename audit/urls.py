"""The audit app's resource of the management API, mounted by gateway/urls.py under
`/api/v1/workspaces/<slug:ws>/` (no trailing slash, like `/v1`): `audit`, the
workspace's admin events (audit/audit_api.py)."""

from django.urls import path

from audit.audit_api import AuditLogView

urlpatterns = [path("audit", AuditLogView.as_view(), name="audit-log")]
