"""The configuration version stamp. Every change to configuration the request path reads
bumps it; each worker's snapshot reloads when it sees a new value."""

from __future__ import annotations

from django.db import models


class ConfigVersion(models.Model):
    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"config v{self.version}"
