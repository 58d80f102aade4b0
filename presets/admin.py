from django.contrib import admin

from presets.models import Preset


@admin.register(Preset)
class PresetAdmin(admin.ModelAdmin):
    list_display = ("slug", "workspace")
