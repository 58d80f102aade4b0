from django.contrib import admin

from presets.models import KeySettings, Preset


@admin.register(Preset)
class PresetAdmin(admin.ModelAdmin):
    list_display = ("slug", "workspace")


@admin.register(KeySettings)
class KeySettingsAdmin(admin.ModelAdmin):
    list_display = ("name", "workspace", "preset", "expires_at")
