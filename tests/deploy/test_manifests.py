"""The Kubernetes manifests (SPEC R-OPS-2, docs/kubernetes.md): every overlay renders,
passes the Kubernetes schemas and every check of deploy/check_manifests.py; and each
check, fed a manifest broken in the way it guards against, says so."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml

from deploy.check_manifests import (
    DEV_OVERLAYS,
    OVERLAYS_DIR,
    Doc,
    check_containers_locked_down,
    check_drain_fits_grace,
    check_gateway_probes,
    check_gateway_rollout,
    check_migrations_first,
    check_no_secret_values,
    check_pods_isolated,
    check_required_objects,
    check_resources,
    check_shared_environment,
    check_single_beat,
    main,
    overlays,
    parse,
    problems_in,
    render,
    validate_schema,
)

KUBERNETES_DIR = OVERLAYS_DIR.parent


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Doc]]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: its kustomize renders the overlays")
    return {overlay.name: parse(render(overlay)) for overlay in overlays()}


@pytest.fixture
def production(rendered: dict[str, list[Doc]]) -> list[Doc]:
    """A copy of the rendered production overlay, for a test to break."""
    return copy.deepcopy(rendered["production"])


def workload(docs: Sequence[Doc], component: str) -> Doc:
    return next(
        doc
        for doc in docs
        if doc["kind"] in ("Deployment", "Job")
        and doc["metadata"]["labels"].get("app.kubernetes.io/component") == component
    )


def pod(docs: Sequence[Doc], component: str) -> Doc:
    return workload(docs, component)["spec"]["template"]["spec"]


def main_container(docs: Sequence[Doc], component: str) -> Doc:
    return pod(docs, component)["containers"][0]


def init_container(docs: Sequence[Doc], component: str) -> Doc:
    return pod(docs, component)["initContainers"][0]


def config_map(docs: Sequence[Doc]) -> Doc:
    return next(doc for doc in docs if doc["kind"] == "ConfigMap")


def without(docs: list[Doc], kind: str, component: str | None = None) -> None:
    docs[:] = [
        doc
        for doc in docs
        if not (
            doc["kind"] == kind
            and component in (None, doc["metadata"]["labels"].get("app.kubernetes.io/component"))
        )
    ]


# The overlays as they are


def test_the_overlays_are_dev_and_production() -> None:
    assert [overlay.name for overlay in overlays()] == ["dev", "production"]


@pytest.mark.parametrize("overlay", ["dev", "production"])
def test_r_ops_2_every_overlay_passes_every_check(
    rendered: dict[str, list[Doc]], overlay: str
) -> None:
    assert problems_in(rendered[overlay], dev_overlay=overlay in DEV_OVERLAYS) == []


@pytest.mark.parametrize("overlay", ["dev", "production"])
def test_r_ops_2_every_overlay_passes_the_kubernetes_schemas(
    rendered: dict[str, list[Doc]], overlay: str, tmp_path: Path
) -> None:
    # given
    path = tmp_path / f"{overlay}.yaml"
    path.write_text(yaml.safe_dump_all(rendered[overlay]))
    # then
    assert validate_schema(path) == []


def test_the_dev_overlay_carries_no_application_key(rendered: dict[str, list[Doc]]) -> None:
    # given
    secrets = [doc for doc in rendered["dev"] if doc["kind"] == "Secret"]
    # then
    assert {key for secret in secrets for key in secret["data"]} == {
        "DATABASE_URL",
        "REDIS_URL",
        "CELERY_BROKER_URL",
        "POSTGRES_USER",
        "POSTGRES_PASSWORD",
        "POSTGRES_DB",
    }


def test_production_defines_no_secret_and_runs_a_tagged_image(
    rendered: dict[str, list[Doc]],
) -> None:
    docs = rendered["production"]
    assert [doc for doc in docs if doc["kind"] == "Secret"] == []
    assert main_container(docs, "gateway")["image"] == "registry.example.com/switchyard:0.1.0"


# Each check, fed what it guards against


Mutation = Callable[[list[Doc]], None]
Check = Callable[[Sequence[Doc]], list[str]]


def _set(container: Callable[[list[Doc]], Doc], key: str, value: object) -> Mutation:
    def mutate(docs: list[Doc]) -> None:
        container(docs).setdefault("securityContext", {})[key] = value

    return mutate


GATEWAY_INIT = "Deployment/switchyard-gateway container wait-for-migrations"
WORKER_MAIN = "Deployment/switchyard-worker container switchyard"

BROKEN: list[tuple[str, Mutation, Check, list[str]]] = [
    (
        "no beat",
        lambda docs: without(docs, "Deployment", "beat"),
        check_required_objects,
        ["no Deployment labelled app.kubernetes.io/component=beat"],
    ),
    (
        "no disruption budget",
        lambda docs: without(docs, "PodDisruptionBudget"),
        check_required_objects,
        ["no PodDisruptionBudget labelled app.kubernetes.io/component=gateway"],
    ),
    (
        "an autoscaler of the old API",
        lambda docs: next(doc for doc in docs if doc["kind"] == "HorizontalPodAutoscaler").update(
            apiVersion="autoscaling/v1"
        ),
        check_required_objects,
        ["no autoscaling/v2 HorizontalPodAutoscaler targets switchyard-gateway"],
    ),
    (
        "no network policy",
        lambda docs: without(docs, "NetworkPolicy"),
        check_required_objects,
        ["no NetworkPolicy"],
    ),
    (
        "an init container allowed to run as root",
        _set(lambda docs: init_container(docs, "gateway"), "runAsNonRoot", False),
        check_containers_locked_down,
        [f"{GATEWAY_INIT}: runAsNonRoot is not true"],
    ),
    (
        "a container running as uid 0",
        _set(lambda docs: main_container(docs, "worker"), "runAsUser", 0),
        check_containers_locked_down,
        [f"{WORKER_MAIN}: runAsUser is 0 (root)"],
    ),
    (
        "a writable root file system",
        _set(lambda docs: main_container(docs, "worker"), "readOnlyRootFilesystem", False),
        check_containers_locked_down,
        [f"{WORKER_MAIN}: readOnlyRootFilesystem is not true"],
    ),
    (
        "privilege escalation",
        _set(lambda docs: main_container(docs, "worker"), "allowPrivilegeEscalation", True),
        check_containers_locked_down,
        [f"{WORKER_MAIN}: allowPrivilegeEscalation is not false"],
    ),
    (
        "capabilities kept",
        _set(lambda docs: main_container(docs, "worker"), "capabilities", {"drop": []}),
        check_containers_locked_down,
        [f"{WORKER_MAIN}: capabilities do not drop ALL"],
    ),
    (
        "no seccomp profile",
        _set(lambda docs: main_container(docs, "worker"), "seccompProfile", {"type": "Unconfined"}),
        check_containers_locked_down,
        [f"{WORKER_MAIN}: seccompProfile is not RuntimeDefault"],
    ),
    (
        "a mounted API token",
        lambda docs: pod(docs, "beat").update(automountServiceAccountToken=True),
        check_pods_isolated,
        ["Deployment/switchyard-beat: automountServiceAccountToken is not false"],
    ),
    (
        "service links",
        lambda docs: pod(docs, "beat").pop("enableServiceLinks"),
        check_pods_isolated,
        ["Deployment/switchyard-beat: enableServiceLinks is not false"],
    ),
    (
        "no memory limit",
        lambda docs: main_container(docs, "worker")["resources"].pop("limits"),
        check_resources,
        [f"{WORKER_MAIN}: no resources limits.memory"],
    ),
    (
        "an init container without requests",
        lambda docs: init_container(docs, "gateway")["resources"].pop("requests"),
        check_resources,
        [f"{GATEWAY_INIT}: no resources requests.cpu, requests.memory"],
    ),
    (
        "readiness asking /healthz",
        lambda docs: main_container(docs, "gateway")["readinessProbe"]["httpGet"].update(
            path="/healthz"
        ),
        check_gateway_probes,
        [
            "gateway readinessProbe: expected GET /readyz, found /healthz",
            "gateway probes share a path: ['/healthz', '/healthz', '/livez']",
        ],
    ),
    (
        "no liveness probe",
        lambda docs: main_container(docs, "gateway").pop("livenessProbe"),
        check_gateway_probes,
        ["gateway livenessProbe: expected GET /livez, found None"],
    ),
    (
        "a grace period shorter than the drain",
        lambda docs: pod(docs, "gateway").update(terminationGracePeriodSeconds=600),
        check_drain_fits_grace,
        [
            "gateway: terminationGracePeriodSeconds 600 is not longer than "
            "preStop + drain grace + drain + shutdown margin = 620 s"
        ],
    ),
    (
        "a grace period that leaves the workers' shutdown no margin",
        lambda docs: pod(docs, "gateway").update(terminationGracePeriodSeconds=615),
        check_drain_fits_grace,
        [
            "gateway: terminationGracePeriodSeconds 615 is not longer than "
            "preStop + drain grace + drain + shutdown margin = 620 s"
        ],
    ),
    (
        "a drain raised in the ConfigMap",
        lambda docs: config_map(docs)["data"].update(SWITCHYARD_DRAIN_SECONDS="900"),
        check_drain_fits_grace,
        [
            "gateway: terminationGracePeriodSeconds 630 is not longer than "
            "preStop + drain grace + drain + shutdown margin = 920 s"
        ],
    ),
    (
        "a drain raised in the container's env, which wins over the ConfigMap",
        lambda docs: main_container(docs, "gateway")["env"].append(
            {"name": "SWITCHYARD_DRAIN_SECONDS", "value": "625"}
        ),
        check_drain_fits_grace,
        [
            "gateway: terminationGracePeriodSeconds 630 is not longer than "
            "preStop + drain grace + drain + shutdown margin = 645 s"
        ],
    ),
    (
        "no drain setting",
        lambda docs: config_map(docs)["data"].pop("SWITCHYARD_DRAIN_GRACE_SECONDS"),
        check_drain_fits_grace,
        ["gateway: SWITCHYARD_DRAIN_GRACE_SECONDS not set by its ConfigMap or env"],
    ),
    (
        "two beats",
        lambda docs: workload(docs, "beat")["spec"].update(replicas=2),
        check_single_beat,
        ["beat: replicas is 2, not 1"],
    ),
    (
        "a rolling beat",
        lambda docs: workload(docs, "beat")["spec"].update(strategy={"type": "RollingUpdate"}),
        check_single_beat,
        ["beat: strategy is RollingUpdate, not Recreate"],
    ),
    (
        "a gateway rollout taking a pod away first",
        lambda docs: workload(docs, "gateway")["spec"]["strategy"]["rollingUpdate"].update(
            maxUnavailable=1
        ),
        check_gateway_rollout,
        [
            "gateway: not a RollingUpdate with maxUnavailable 0 ({'rollingUpdate': "
            "{'maxSurge': 1, 'maxUnavailable': 1}, 'type': 'RollingUpdate'})"
        ],
    ),
    (
        "replicas beside the autoscaler",
        lambda docs: workload(docs, "gateway")["spec"].update(replicas=3),
        check_gateway_rollout,
        ["gateway: sets replicas although a HorizontalPodAutoscaler scales it"],
    ),
    (
        "a worker not waiting for migrations",
        lambda docs: pod(docs, "worker").pop("initContainers"),
        check_migrations_first,
        [
            "Deployment/switchyard-worker: no init container waits for migrations",
        ],
    ),
    (
        "migrations checked with another release",
        lambda docs: init_container(docs, "beat").update(image="switchyard:0.0.9"),
        check_migrations_first,
        [
            "Deployment/switchyard-beat: checks migrations with switchyard:0.0.9 but runs "
            "['registry.example.com/switchyard:0.1.0']"
        ],
    ),
    (
        "no migration Job",
        lambda docs: without(docs, "Job"),
        check_migrations_first,
        ["0 Jobs run switchyard migrate --noinput, not 1"],
    ),
    (
        "a migration Job waiting for itself",
        lambda docs: pod(docs, "migrate").update(
            initContainers=[copy.deepcopy(init_container(docs, "gateway"))]
        ),
        check_migrations_first,
        ["Job/switchyard-migrate: the migration Job waits for itself"],
    ),
    (
        "an init container without the database URL",
        lambda docs: init_container(docs, "beat").update(
            env=[e for e in init_container(docs, "beat")["env"] if e["name"] != "DATABASE_URL"]
        ),
        check_shared_environment,
        [
            "Deployment/switchyard-beat container wait-for-migrations: its envFrom and "
            "secret references differ from the gateway's"
        ],
    ),
]


@pytest.mark.parametrize(
    ("_case", "mutate", "check", "expected"), BROKEN, ids=[case[0] for case in BROKEN]
)
def test_each_check_reports_what_it_guards_against(
    production: list[Doc],
    _case: str,
    mutate: Mutation,
    check: Check,
    expected: list[str],
) -> None:
    # given
    assert check(production) == []
    mutate(production)
    # when
    problems = check(production)
    # then
    assert problems == expected


def test_a_secret_with_values_fails_outside_the_dev_overlay(production: list[Doc]) -> None:
    # given
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "switchyard-secrets"}}
    production.append({**secret, "stringData": {"DATABASE_URL": "postgres://u:p@db/s"}})
    # then
    assert check_no_secret_values(production, dev_overlay=False) == [
        "Secret/switchyard-secrets carries values (DATABASE_URL)"
    ]
    assert check_no_secret_values(production, dev_overlay=True) == []


def test_an_application_key_fails_even_in_the_dev_overlay(rendered: dict[str, list[Doc]]) -> None:
    # given
    docs = copy.deepcopy(rendered["dev"])
    secret = next(doc for doc in docs if doc["metadata"]["name"].startswith("switchyard-secrets"))
    secret["data"]["SWITCHYARD_KEY_PEPPER"] = "ZGV2"
    # then
    assert check_no_secret_values(docs, dev_overlay=True) == [
        f"Secret/{secret['metadata']['name']} carries SWITCHYARD_KEY_PEPPER"
    ]


def test_a_secret_setting_written_as_a_literal_fails(production: list[Doc]) -> None:
    # given
    main_container(production, "worker")["env"].append(
        {"name": "REDIS_URL", "value": "redis://cache:6379/0"}
    )
    config_map(production)["data"]["SECRET_KEY"] = "x"
    # then
    assert check_no_secret_values(production, dev_overlay=True) == [
        f"ConfigMap/{config_map(production)['metadata']['name']} holds secret settings SECRET_KEY",
        f"{WORKER_MAIN}: REDIS_URL is written as a value",
    ]


# The schemas and the command


def test_the_schema_validation_rejects_an_unknown_field(
    production: list[Doc], tmp_path: Path
) -> None:
    # given
    main_container(production, "gateway")["lifecycl"] = {}
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump_all(production))
    # when
    problems = validate_schema(path)
    # then
    assert len(problems) == 1
    assert problems[0].startswith("ERROR")
    assert "'lifecycl' was unexpected" in problems[0]


def test_the_schema_validation_counts_a_kind_it_cannot_validate(tmp_path: Path) -> None:
    # given
    path = tmp_path / "unknown.yaml"
    path.write_text("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n")
    # when
    problems = validate_schema(path)
    # then
    assert len(problems) == 1
    assert problems[0].startswith("WARN")


def test_the_command_passes_every_overlay_and_writes_what_it_rendered(
    rendered: dict[str, list[Doc]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # when
    status = main(["--out", str(tmp_path)])
    # then
    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    assert [line.split(":")[0] for line in lines] == ["ok   dev", "ok   production"]
    assert parse((tmp_path / "production.yaml").read_text()) == rendered["production"]


def test_the_command_fails_on_a_broken_overlay(
    rendered: dict[str, list[Doc]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given: a copy of the base and an overlay over it that runs two beats
    shutil.copytree(KUBERNETES_DIR / "base", tmp_path / "base")
    overlay = tmp_path / "overlays" / "two-beats"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(
        "resources: [../../base]\n"
        "patches:\n"
        "  - target: {kind: Deployment, name: switchyard-beat}\n"
        "    patch: |-\n"
        "      - {op: replace, path: /spec/replicas, value: 2}\n"
    )
    # when
    status = main(["--overlays", str(tmp_path / "overlays"), "--out", str(tmp_path / "out")])
    # then
    assert status == 1
    assert capsys.readouterr().out.splitlines() == [
        "FAIL two-beats: 1 problem(s)",
        "  - beat: replicas is 2, not 1",
    ]
