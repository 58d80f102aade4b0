"""The catalog's names as the engine reads them, from the database: what a route or a
key setting may name (routing.engine.resolve.CatalogNames). For writers that validate
configuration (presets/services.py); the request path reads the same names from its
snapshot instead."""

from __future__ import annotations

from routing.engine.names import name_index
from routing.engine.resolve import CatalogNames
from routing.models import Model, Provider, VirtualModel


def catalog_names() -> CatalogNames:
    return CatalogNames(
        names=name_index(Model.objects.values_list("slug", "aliases")),
        providers=frozenset(Provider.objects.values_list("slug", flat=True)),
        virtual=frozenset(VirtualModel.objects.values_list("slug", flat=True)),
    )
