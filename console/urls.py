"""The console's pages, under /console/ (gateway/urls.py). Each workspace page is
`/console/<ws>/…`; a person sees only the workspaces they are a member of."""

from django.urls import path

from console import (
    audit_views,
    budget_views,
    credential_views,
    explain_views,
    key_views,
    live_views,
    policy_views,
    preset_views,
    request_views,
    route_release_views,
    route_views,
    sign_in,
)

app_name = "console"
urlpatterns = [
    path("", sign_in.home, name="home"),
    path("sign-in/", sign_in.SignIn.as_view(), name="sign-in"),
    path("sign-out/", sign_in.SignOut.as_view(), name="sign-out"),
    path("<slug:ws>/requests/", request_views.request_log, name="requests"),
    path("<slug:ws>/requests/<uuid:trace_id>/", request_views.trace, name="trace"),
    path("<slug:ws>/presets/", preset_views.presets, name="presets"),
    path("<slug:ws>/presets/save", preset_views.save_preset, name="save-preset"),
    path("<slug:ws>/keys/", key_views.keys, name="keys"),
    path("<slug:ws>/credentials/", credential_views.credentials, name="credentials"),
    path("<slug:ws>/credentials/save", credential_views.save_credential, name="save-credential"),
    path(
        "<slug:ws>/credentials/<slug:provider>/delete",
        credential_views.remove_credential,
        name="remove-credential",
    ),
    path("<slug:ws>/budgets/", budget_views.budgets, name="budgets"),
    path("<slug:ws>/budgets/save", budget_views.save_budget, name="save-budget"),
    path(
        "<slug:ws>/budgets/<int:budget_id>/delete",
        budget_views.delete_budget,
        name="delete-budget",
    ),
    path("<slug:ws>/budgets/limits", budget_views.save_limits, name="save-limits"),
    path("<slug:ws>/keys/new/", key_views.create_key, name="create-key"),
    path("<slug:ws>/keys/<int:key_id>/", key_views.edit_key, name="edit-key"),
    path("<slug:ws>/keys/<int:key_id>/revoke/", key_views.revoke_key, name="revoke-key"),
    path("<slug:ws>/policy/", policy_views.policy, name="policy"),
    path("<slug:ws>/policy/save", policy_views.save_policy, name="save-policy"),
    path("<slug:ws>/policy/preview", policy_views.preview_policy, name="preview-policy"),
    path("<slug:ws>/live/", live_views.live_metrics, name="live"),
    path("<slug:ws>/live/data", live_views.live_data, name="live-data"),
    path("<slug:ws>/explain/", explain_views.explain, name="explain"),
    path("<slug:ws>/audit/", audit_views.audit_log, name="audit"),
    path("<slug:ws>/routes/", route_views.routes, name="routes"),
    path("<slug:ws>/routes/new", route_views.new_route, name="new-route"),
    path("<slug:ws>/routes/save", route_views.save, name="save-route"),
    path("<slug:ws>/routes/<slug:slug>/", route_views.route, name="route"),
    path("<slug:ws>/routes/<slug:slug>/diff/", route_release_views.diff, name="route-diff"),
    path("<slug:ws>/routes/<slug:slug>/replay", route_release_views.replay, name="route-replay"),
    path("<slug:ws>/routes/<slug:slug>/deploy/", route_release_views.deploy, name="deploy-route"),
    path(
        "<slug:ws>/routes/<slug:slug>/rollback/",
        route_release_views.rollback,
        name="rollback-route",
    ),
]
