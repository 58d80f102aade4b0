"""`make k8s-check` (SPEC R-OPS-2, docs/kubernetes.md): render every overlay under
deploy/kubernetes/overlays with `kubectl kustomize`, write what it rendered to
var/kubernetes/OVERLAY.yaml, validate it against the Kubernetes schemas
(kubernetes-validate --strict, offline), then check what a schema cannot see: that
every container is locked down and sized, the probes and the drain fit together, beat
stays single, migrations come first and no secret value is in a manifest.

Each check is a pure function from the parsed documents to a list of problems, so the
tests (tests/deploy/test_manifests.py) feed them broken manifests; only `render` and
`validate_schema` run processes. Exit status: 0 when every overlay passes, 1 otherwise."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from gateway.drain import SHUTDOWN_MARGIN_S

ROOT = Path(__file__).resolve().parents[1]
OVERLAYS_DIR = ROOT / "deploy" / "kubernetes" / "overlays"
OUTPUT_DIR = ROOT / "var" / "kubernetes"
# The Kubernetes release the manifests target; the preStop `sleep` action needs 1.30 or
# later. kubernetes-validate ships the schemas of every release it knows in its wheel.
KUBERNETES_VERSION = "1.32.0"

# Overlays that may carry Secret values, which must be development-only ones (and never
# the application keys): the in-namespace database's URL, for trying the gateway out.
DEV_OVERLAYS = frozenset({"dev"})
APP_KEYS = ("SECRET_KEY", "SWITCHYARD_ENCRYPTION_KEYS", "SWITCHYARD_KEY_PEPPER")
SECRET_KEYS = (*APP_KEYS, "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")

COMPONENT = "app.kubernetes.io/component"
IMAGE = "switchyard"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")
# Three questions, three endpoints (gateway/api/readiness.py); /readyz is the one that
# answers 503 while draining, so it must be the readiness probe.
GATEWAY_PROBES = {
    "startupProbe": "/healthz",
    "readinessProbe": "/readyz",
    "livenessProbe": "/livez",
}
MIGRATE_COMMAND = ["switchyard", "migrate", "--noinput"]
MIGRATE_CHECK = "switchyard migrate --check"
REQUIRED_RESOURCES = (("requests", "cpu"), ("requests", "memory"), ("limits", "memory"))
DEFAULT_GRACE_PERIOD_S = 30  # Kubernetes' terminationGracePeriodSeconds when unset

Doc = dict[str, Any]


class RenderError(Exception):
    """kustomize or kubernetes-validate could not run, or kustomize refused an overlay."""


# Reading the documents


def describe(doc: Doc) -> str:
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def workloads(docs: Sequence[Doc]) -> Iterator[Doc]:
    return (doc for doc in docs if doc.get("kind") in WORKLOAD_KINDS)


def pod_spec(workload: Doc) -> Doc:
    return workload["spec"]["template"]["spec"]


def all_containers(workload: Doc) -> list[Doc]:
    pod = pod_spec(workload)
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def runs_switchyard(workload: Doc) -> bool:
    """Whether the workload runs the Switchyard image (any registry, any tag)."""
    images = (container.get("image", "") for container in all_containers(workload))
    return any(image.split("@")[0].rsplit("/", 1)[-1].split(":")[0] == IMAGE for image in images)


def component(docs: Sequence[Doc], name: str, kind: str = "Deployment") -> Doc | None:
    found = [
        doc
        for doc in docs
        if doc.get("kind") == kind and doc["metadata"].get("labels", {}).get(COMPONENT) == name
    ]
    return found[0] if len(found) == 1 else None


def container_environment(container: Doc, docs: Sequence[Doc]) -> dict[str, str]:
    """The literal environment the container gets: its ConfigMaps' data (envFrom), then
    its own `value`s, which win as they do in Kubernetes."""
    maps = {doc["metadata"]["name"]: doc for doc in docs if doc.get("kind") == "ConfigMap"}
    environment: dict[str, str] = {}
    for source in container.get("envFrom", []):
        name = source.get("configMapRef", {}).get("name")
        if name in maps:
            environment.update(maps[name].get("data", {}))
    for entry in container.get("env", []):
        if "value" in entry:
            environment[entry["name"]] = str(entry["value"])
    return environment


def prestop_sleep_s(container: Doc) -> int:
    """Seconds the preStop hook sleeps: the `sleep` action, or an exec of `sleep N`."""
    hook = container.get("lifecycle", {}).get("preStop", {})
    if "sleep" in hook:
        return int(hook["sleep"]["seconds"])
    command = hook.get("exec", {}).get("command", [])
    if len(command) == 2 and command[0] == "sleep":
        return int(command[1])
    return 0


def gateway_container(docs: Sequence[Doc]) -> tuple[Doc, Doc] | None:
    gateway = component(docs, "gateway")
    if gateway is None or not pod_spec(gateway).get("containers"):
        return None
    return gateway, pod_spec(gateway)["containers"][0]


# The checks: documents in, problems out


def check_required_objects(docs: Sequence[Doc]) -> list[str]:
    """R-OPS-2's parts: gateway, worker, beat, the migration Job, the gateway's Service,
    disruption budget and autoscaler, and a network policy."""
    problems = [
        f"no {kind} labelled {COMPONENT}={name}"
        for kind, name in [
            ("Deployment", "gateway"),
            ("Deployment", "worker"),
            ("Deployment", "beat"),
            ("Job", "migrate"),
            ("Service", "gateway"),
            ("PodDisruptionBudget", "gateway"),
        ]
        if component(docs, name, kind) is None
    ]
    autoscalers = [doc for doc in docs if doc.get("kind") == "HorizontalPodAutoscaler"]
    if not any(
        doc.get("apiVersion") == "autoscaling/v2"
        and doc["spec"]["scaleTargetRef"].get("name") == "switchyard-gateway"
        for doc in autoscalers
    ):
        problems.append("no autoscaling/v2 HorizontalPodAutoscaler targets switchyard-gateway")
    if not any(doc.get("kind") == "NetworkPolicy" for doc in docs):
        problems.append("no NetworkPolicy")
    return problems


def check_containers_locked_down(docs: Sequence[Doc]) -> list[str]:
    """Every container: non-root, read-only root file system, no privilege escalation, no
    capability, the runtime's seccomp profile (a container's own settings override the
    pod's)."""
    problems = []
    for workload in workloads(docs):
        pod_context = pod_spec(workload).get("securityContext", {})
        for container in all_containers(workload):
            where = f"{describe(workload)} container {container.get('name')}"
            context = {**pod_context, **container.get("securityContext", {})}
            if context.get("runAsNonRoot") is not True:
                problems.append(f"{where}: runAsNonRoot is not true")
            if context.get("runAsUser") == 0:
                problems.append(f"{where}: runAsUser is 0 (root)")
            if context.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: readOnlyRootFilesystem is not true")
            if context.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation is not false")
            if "ALL" not in context.get("capabilities", {}).get("drop", []):
                problems.append(f"{where}: capabilities do not drop ALL")
            if context.get("seccompProfile", {}).get("type") != "RuntimeDefault":
                problems.append(f"{where}: seccompProfile is not RuntimeDefault")
    return problems


def check_pods_isolated(docs: Sequence[Doc]) -> list[str]:
    """No pod mounts an API token (none calls the Kubernetes API) or gets service-link
    variables (they would be named SWITCHYARD_*, the settings' own prefix)."""
    problems = []
    for workload in workloads(docs):
        pod = pod_spec(workload)
        if pod.get("automountServiceAccountToken") is not False:
            problems.append(f"{describe(workload)}: automountServiceAccountToken is not false")
        if pod.get("enableServiceLinks") is not False:
            problems.append(f"{describe(workload)}: enableServiceLinks is not false")
    return problems


def check_resources(docs: Sequence[Doc]) -> list[str]:
    """Every container requests CPU and memory and has a memory limit."""
    problems = []
    for workload in workloads(docs):
        for container in all_containers(workload):
            resources = container.get("resources", {})
            missing = [
                f"{kind}.{name}"
                for kind, name in REQUIRED_RESOURCES
                if name not in resources.get(kind, {})
            ]
            if missing:
                problems.append(
                    f"{describe(workload)} container {container.get('name')}: "
                    f"no resources {', '.join(missing)}"
                )
    return problems


def check_gateway_probes(docs: Sequence[Doc]) -> list[str]:
    """The gateway's startup, readiness and liveness probes ask /healthz, /readyz and
    /livez: three distinct questions, the draining one deciding readiness."""
    found = gateway_container(docs)
    if found is None:
        return ["no gateway container to probe"]
    _, container = found
    problems = []
    paths = []
    for probe, expected in GATEWAY_PROBES.items():
        path = container.get(probe, {}).get("httpGet", {}).get("path")
        paths.append(path)
        if path != expected:
            problems.append(f"gateway {probe}: expected GET {expected}, found {path}")
    if len(set(paths)) != len(paths):
        problems.append(f"gateway probes share a path: {paths}")
    return problems


def check_drain_fits_grace(docs: Sequence[Doc]) -> list[str]:
    """The kubelet's SIGKILL comes after the drain ends: terminationGracePeriodSeconds >
    preStop sleep + SWITCHYARD_DRAIN_GRACE_SECONDS + SWITCHYARD_DRAIN_SECONDS + the
    supervisor's own margin for the workers' shutdown (gateway/drain.py)."""
    found = gateway_container(docs)
    if found is None:
        return ["no gateway container to drain"]
    gateway, container = found
    environment = container_environment(container, docs)
    missing = [
        name
        for name in ("SWITCHYARD_DRAIN_GRACE_SECONDS", "SWITCHYARD_DRAIN_SECONDS")
        if name not in environment
    ]
    if missing:
        return [f"gateway: {', '.join(missing)} not set by its ConfigMap or env"]
    needed_s = (
        prestop_sleep_s(container)
        + float(environment["SWITCHYARD_DRAIN_GRACE_SECONDS"])
        + float(environment["SWITCHYARD_DRAIN_SECONDS"])
        + SHUTDOWN_MARGIN_S
    )
    grace_s = pod_spec(gateway).get("terminationGracePeriodSeconds", DEFAULT_GRACE_PERIOD_S)
    if grace_s <= needed_s:
        return [
            f"gateway: terminationGracePeriodSeconds {grace_s} is not longer than "
            f"preStop + drain grace + drain + shutdown margin = {needed_s:g} s"
        ]
    return []


def check_single_beat(docs: Sequence[Doc]) -> list[str]:
    """Exactly one beat, and a rollout stops the old one before starting the new one."""
    beat = component(docs, "beat")
    if beat is None:
        return ["no beat Deployment"]
    problems = []
    if beat["spec"].get("replicas", 1) != 1:
        problems.append(f"beat: replicas is {beat['spec']['replicas']}, not 1")
    strategy = beat["spec"].get("strategy", {}).get("type", "RollingUpdate")
    if strategy != "Recreate":
        problems.append(f"beat: strategy is {strategy}, not Recreate")
    return problems


def check_gateway_rollout(docs: Sequence[Doc]) -> list[str]:
    """A rollout takes no gateway pod away before its replacement is ready, and the
    autoscaler alone owns the replica count (a `replicas` in the manifest would be
    re-applied over its choice on every `kubectl apply`)."""
    gateway = component(docs, "gateway")
    if gateway is None:
        return ["no gateway Deployment"]
    problems = []
    strategy = gateway["spec"].get("strategy", {})
    unavailable = strategy.get("rollingUpdate", {}).get("maxUnavailable")
    if strategy.get("type") != "RollingUpdate" or unavailable not in (0, "0%"):
        problems.append(f"gateway: not a RollingUpdate with maxUnavailable 0 ({strategy})")
    scaled = any(
        doc.get("kind") == "HorizontalPodAutoscaler"
        and doc["spec"]["scaleTargetRef"].get("name") == gateway["metadata"]["name"]
        for doc in docs
    )
    if scaled and "replicas" in gateway["spec"]:
        problems.append("gateway: sets replicas although a HorizontalPodAutoscaler scales it")
    return problems


def is_waiting_for_migrations(container: Doc) -> bool:
    return MIGRATE_CHECK in shlex.join(container.get("command", []) + container.get("args", []))


def check_migrations_first(docs: Sequence[Doc]) -> list[str]:
    """One Job runs `switchyard migrate --noinput`; every other workload of the image
    waits in an init container, of the same image, until `migrate --check` passes."""
    problems = []
    jobs = [
        doc
        for doc in workloads(docs)
        if doc["kind"] == "Job"
        and any(c.get("command") == MIGRATE_COMMAND for c in pod_spec(doc)["containers"])
    ]
    if len(jobs) != 1:
        problems.append(f"{len(jobs)} Jobs run {shlex.join(MIGRATE_COMMAND)}, not 1")
    for workload in workloads(docs):
        if not runs_switchyard(workload):
            continue
        inits = pod_spec(workload).get("initContainers", [])
        waiting = [container for container in inits if is_waiting_for_migrations(container)]
        if workload in jobs:
            if waiting:
                problems.append(f"{describe(workload)}: the migration Job waits for itself")
            continue
        if not waiting:
            problems.append(f"{describe(workload)}: no init container waits for migrations")
            continue
        images = {c.get("image") for c in pod_spec(workload)["containers"]}
        if {waiting[0].get("image")} != images:
            problems.append(
                f"{describe(workload)}: checks migrations with {waiting[0].get('image')} "
                f"but runs {sorted(images)}"
            )
    return problems


def secret_wiring(container: Doc) -> tuple[list[Any], list[Any]]:
    """What a container reads its secrets and settings from: envFrom, and the env entries
    taken from elsewhere (valueFrom)."""
    referenced = [entry for entry in container.get("env", []) if "valueFrom" in entry]
    return container.get("envFrom", []), referenced


def check_shared_environment(docs: Sequence[Doc]) -> list[str]:
    """Every container of the image, init containers included, reads the same ConfigMap
    and Secret keys as the gateway: an init container without DATABASE_URL would check
    some other database's migrations, a worker without it would use another database."""
    found = gateway_container(docs)
    if found is None:
        return ["no gateway container to compare with"]
    expected = secret_wiring(found[1])
    problems = []
    for workload in workloads(docs):
        if not runs_switchyard(workload):
            continue
        for container in all_containers(workload):
            if secret_wiring(container) != expected:
                problems.append(
                    f"{describe(workload)} container {container.get('name')}: its envFrom "
                    "and secret references differ from the gateway's"
                )
    return problems


def check_no_secret_values(docs: Sequence[Doc], *, dev_overlay: bool) -> list[str]:
    """Secrets are referenced by name only: no Secret with values (a dev overlay's
    generated ones excepted, never with the application keys), no secret variable
    written as a literal in a container or a ConfigMap."""
    problems = []
    for doc in docs:
        kind = doc.get("kind")
        if kind == "Secret":
            keys = {*doc.get("data", {}), *doc.get("stringData", {})}
            if keys and not dev_overlay:
                problems.append(f"{describe(doc)} carries values ({', '.join(sorted(keys))})")
            elif baked := sorted(keys & set(APP_KEYS)):
                problems.append(f"{describe(doc)} carries {', '.join(baked)}")
        if kind == "ConfigMap" and (leaked := sorted(set(doc.get("data", {})) & set(SECRET_KEYS))):
            problems.append(f"{describe(doc)} holds secret settings {', '.join(leaked)}")
    for workload in workloads(docs):
        for container in all_containers(workload):
            for entry in container.get("env", []):
                if entry.get("name") in SECRET_KEYS and "value" in entry:
                    problems.append(
                        f"{describe(workload)} container {container.get('name')}: "
                        f"{entry['name']} is written as a value"
                    )
    return problems


CHECKS: tuple[Callable[[Sequence[Doc]], list[str]], ...] = (
    check_required_objects,
    check_containers_locked_down,
    check_pods_isolated,
    check_resources,
    check_gateway_probes,
    check_drain_fits_grace,
    check_single_beat,
    check_gateway_rollout,
    check_migrations_first,
    check_shared_environment,
)


def problems_in(docs: Sequence[Doc], *, dev_overlay: bool) -> list[str]:
    """Every problem every check finds in one rendered overlay."""
    found = [problem for check in CHECKS for problem in check(docs)]
    return found + check_no_secret_values(docs, dev_overlay=dev_overlay)


# Processes


def parse(rendered: str) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def render(overlay: Path) -> str:
    """`kubectl kustomize OVERLAY`'s output."""
    try:
        done = subprocess.run(
            ["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise RenderError("kubectl is not installed (kustomize is part of it)") from None
    if done.returncode != 0:
        raise RenderError(f"kubectl kustomize {overlay} failed: {done.stderr.strip()}")
    return done.stdout


def validate_schema(path: Path) -> list[str]:
    """kubernetes-validate's complaints about the file. Its warnings count: one means a
    kind it has no schema for, which would otherwise pass unvalidated."""
    executable = Path(sys.executable).parent / "kubernetes-validate"
    command = [str(executable), "--strict", "--quiet", "-k", KUBERNETES_VERSION, str(path)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise RenderError(f"{executable} is not installed (make install)") from None
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    complaints = [line for line in lines if line.startswith(("ERROR", "WARN", "FATAL"))]
    if done.returncode != 0 and not complaints:
        complaints = lines or [f"kubernetes-validate exited {done.returncode}"]
    return complaints


def overlays(directory: Path = OVERLAYS_DIR) -> list[Path]:
    return sorted(path.parent for path in directory.glob("*/kustomization.yaml"))


def check_overlay(overlay: Path, output_dir: Path) -> tuple[int, list[str]]:
    """Render, write, validate and check one overlay: (objects rendered, problems)."""
    rendered = render(overlay)
    output_dir.mkdir(parents=True, exist_ok=True)
    written = output_dir / f"{overlay.name}.yaml"
    written.write_text(rendered)
    docs = parse(rendered)
    dev_overlay = overlay.name in DEV_OVERLAYS
    return len(docs), validate_schema(written) + problems_in(docs, dev_overlay=dev_overlay)


def report(line: str) -> None:
    print(line)  # noqa: T201 - this command's output


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--overlays", type=Path, default=OVERLAYS_DIR)
    parser.add_argument("--out", type=Path, default=OUTPUT_DIR, help="where renders are written")
    args = parser.parse_args(argv)
    found = overlays(args.overlays)
    if not found:
        report(f"FAIL no overlay (DIR/kustomization.yaml) under {args.overlays}")
        return 1
    failed = False
    for overlay in found:
        try:
            count, problems = check_overlay(overlay, args.out)
        except RenderError as error:
            count, problems = 0, [str(error)]
        failed = failed or bool(problems)
        if problems:
            report(f"FAIL {overlay.name}: {len(problems)} problem(s)")
            for problem in problems:
                report(f"  - {problem}")
        else:
            written = args.out.resolve() / f"{overlay.name}.yaml"
            shown = written.relative_to(ROOT) if written.is_relative_to(ROOT) else written
            report(
                f"ok   {overlay.name}: {count} objects, schemas of Kubernetes "
                f"{KUBERNETES_VERSION} (strict), {len(CHECKS) + 1} checks -> {shown}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
