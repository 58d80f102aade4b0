"""What a policy leaves of the catalog (SPEC R-POL-1, console policy editor): for every
model, which endpoints remain and why each other is excluded — decided by the engine's own
filter (the request-independent steps `/v1/models` uses, routing/engine/filters.py), so
the preview cannot disagree with routing. Pure: the policy and the catalog come in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from routing.engine.filters import REQUEST_INDEPENDENT, first_failing
from routing.engine.types import EndpointInfo, PolicyView, RoutingRequest


@dataclass(frozen=True, slots=True)
class ModelPreview:
    model: str
    kept: tuple[str, ...]
    excluded: tuple[tuple[str, str], ...]  # (endpoint, literal reason)

    @property
    def total(self) -> int:
        return len(self.kept) + len(self.excluded)

    @property
    def sentence(self) -> str:
        kept = f": {', '.join(self.kept)}" if self.kept else ""
        return f"{len(self.kept)} of {self.total} endpoints of {self.model} remain{kept}"


def preview(
    policy: PolicyView, endpoints: Mapping[str, tuple[EndpointInfo, ...]]
) -> list[ModelPreview]:
    """Each model's endpoints under `policy`, models by name."""
    found = []
    for model in sorted(endpoints):
        probe = RoutingRequest(requested_model=model, model=model)
        kept, excluded = [], []
        for endpoint in endpoints[model]:
            reason = first_failing(endpoint, probe, policy, REQUEST_INDEPENDENT)
            if reason is None:
                kept.append(endpoint.id)
            else:
                excluded.append((endpoint.id, str(reason)))
        found.append(ModelPreview(model, tuple(kept), tuple(excluded)))
    return found
