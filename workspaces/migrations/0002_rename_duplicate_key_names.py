"""Before key names become unique within a workspace (D-24, migration 0003): of each set
of live (not revoked) keys sharing a name in one workspace, the oldest keeps the name and
every other gets `-<lookup_id>` appended (cut so it fits the column). Revoked keys are
left alone: the constraint does not cover them. Not reversible in a useful way: going
back keeps the new names, which the old schema accepts."""

from django.db import migrations

NAME_MAX_CHARS = 100  # ApiKey.name


def renamed(name: str, lookup_id: str) -> str:
    suffix = f"-{lookup_id}"
    return name[: NAME_MAX_CHARS - len(suffix)] + suffix


def rename_duplicate_key_names(apps, schema_editor):  # type: ignore[no-untyped-def]
    ApiKey = apps.get_model("workspaces", "ApiKey")
    live = ApiKey.objects.filter(revoked_at__isnull=True)
    seen: set[tuple[int, str]] = set()
    for key in live.order_by("workspace_id", "name", "created_at", "id").iterator():
        slot = (key.workspace_id, key.name)
        if slot in seen:
            # Lookup ids are unique, so `<name>-<lookup_id>` is free unless someone chose
            # exactly that name; then 0003's constraint stops the migration loudly.
            key.name = renamed(key.name, key.lookup_id)
            key.save(update_fields=["name"])
        seen.add((key.workspace_id, key.name))


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(rename_duplicate_key_names, migrations.RunPython.noop),
    ]
