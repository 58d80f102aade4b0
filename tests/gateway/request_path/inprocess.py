"""A gateway served in this test process (Django's AsyncClient) against a real fake
upstream: for tests that must look inside the process's state while requests run."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from decimal import Decimal

from fakeupstream.process import running_fake_upstream
from gateway.state import runtime
from gateway.state.db_thread import close_connections
from routing.models import Endpoint, Model, Provider, VirtualModel
from workspaces.models import Policy, Workspace
from workspaces.secrets import owner_aad, seal
from workspaces.services import create_api_key

MODEL_A, MODEL_B = "acme/model-a", "acme/model-b"
ROUND_ROBIN = "duo"  # round_robin over MODEL_A and MODEL_B
TIERED = "smart"  # easy: MODEL_A, hard: MODEL_B


@contextlib.contextmanager
def in_process_gateway(settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A catalog (two models, a round-robin virtual model, a tiered alias) on a fake
    upstream, fresh runtime singletons, and the workspace key; `settings` is pytest-django's
    fixture. Needs `django_db(transaction=True)`."""
    settings.GATEWAY = dataclasses.replace(
        settings.GATEWAY, snapshot_poll_s=3600, trace_flush_s=3600
    )
    runtime.reset()
    with running_fake_upstream("fast", api_key="k") as fake:
        sealed = seal("k", owner_aad(None, "p"), settings.SWITCHYARD_ENCRYPTION_KEYS)
        provider = Provider.objects.create(
            slug="p", name="p", base_url=fake.base_url, credential_ciphertext=sealed.ciphertext,
            credential_nonce=sealed.nonce, credential_key_id=sealed.key_id,
        )  # fmt: skip
        for index, slug in enumerate((MODEL_A, MODEL_B)):
            model = Model.objects.create(slug=slug, capabilities=["text"])
            Endpoint.objects.create(
                id=f"e-{index}", provider=provider, model=model, upstream_model="up",
                region="r", price_input=Decimal(1), price_output=Decimal(1),
            )  # fmt: skip
        VirtualModel.objects.create(
            slug=ROUND_ROBIN, strategy="round_robin",
            targets=[{"model": MODEL_A, "weight": 1}, {"model": MODEL_B, "weight": 1}],
        )  # fmt: skip
        workspace = Workspace.objects.create(
            slug="w", name="w",
            smart_routing={"aliases": {TIERED: {"easy": MODEL_A, "hard": MODEL_B}}},
        )  # fmt: skip
        Policy.objects.create(workspace=workspace)
        try:
            yield create_api_key(workspace, actor="test").plaintext
        finally:
            runtime.reset()
            close_connections()  # or PostgreSQL cannot drop the test database after
