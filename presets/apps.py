from django.apps import AppConfig


class PresetsConfig(AppConfig):
    name = "presets"
    default_auto_field = "django.db.models.BigAutoField"
