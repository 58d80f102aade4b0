"""The request log's routes of the management API, mounted by gateway/urls.py under
`/api/v1/workspaces/<slug:ws>/` (audit/trace_api.py)."""

from django.urls import path

from audit.trace_api import TraceDetailView, TraceListView

urlpatterns = [
    path("traces", TraceListView.as_view(), name="traces"),
    path("traces/<str:trace_id>", TraceDetailView.as_view(), name="trace-detail"),
]
