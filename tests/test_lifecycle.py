"""A stack's life on real GCP: created from nothing, changed, scaled to zero, destroyed.

Each test here failed on the program before its fix.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from render.engine import Registration, Render, reveal
from tests.conftest import STACKS, render_with, rendered

ALERT = "gcp:monitoring/alertPolicy:AlertPolicy"
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
SERVICE_API = "gcp:projects/service:Service"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SNAPSHOT = "kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot"
JOB = "kubernetes:batch/v1:Job"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def enabled_apis(render: Render) -> set[str]:
    return {r.inputs["service"] for r in render.by_type(SERVICE_API)}


def test_alert_conditions_are_created_before_any_metric_exists() -> None:
    # Cloud Monitoring checks a PromQL condition's metrics at create unless told not to;
    # on a first `up` no vLLM pod has been scraped yet.
    policies = rendered("dev").by_type(ALERT)
    assert policies
    for policy in policies:
        for condition in policy.inputs["conditions"]:
            assert condition["conditionPrometheusQueryLanguage"]["disableMetricValidation"] is True, policy.name


@pytest.mark.parametrize("api", ["containerfilesystem.googleapis.com", "iam.googleapis.com", "cloudresourcemanager.googleapis.com"])
def test_every_stack_enables_the_apis_its_resources_need(stack: str, api: str) -> None:
    assert api in enabled_apis(rendered(stack))


def test_dashboard_tiles_send_no_zero_positions_the_api_drops() -> None:
    # The API omits zero xPos/yPos from what it returns, so sending them shows a diff on every up.
    board = json.loads(rendered("dev").one(DASHBOARD).inputs["dashboardJson"])
    tiles = board["mosaicLayout"]["tiles"]
    assert any("xPos" not in tile for tile in tiles) and any("yPos" not in tile for tile in tiles)
    for tile in tiles:
        assert tile.get("xPos", 1) != 0 and tile.get("yPos", 1) != 0


def _rolling_update(render: Render) -> dict[str, Any]:
    return dict(render.one(DEPLOYMENT).inputs["spec"]["strategy"]["rollingUpdate"])


@pytest.mark.parametrize("nodes", [1, 2, 3, 4, 12])
def test_a_rollout_keeps_a_replica_serving(nodes: int) -> None:
    update = _rolling_update(render_with("gateway", nodes=nodes))
    surge, unavailable = update["maxSurge"], update["maxUnavailable"]
    assert nodes + surge - unavailable >= 1
    assert unavailable + surge >= 1


def test_the_gateway_stack_rolls_out_in_rounds_that_keep_one_serving() -> None:
    assert _rolling_update(rendered("gateway")) == {"maxSurge": 0, "maxUnavailable": 3}


def test_a_user_may_ask_for_a_rollout_that_replaces_every_replica_at_once() -> None:
    update = _rolling_update(render_with("gateway", rollout={"parallelism": 4, "keepServing": False}))
    assert update == {"maxSurge": 0, "maxUnavailable": 4}


def _no_nulls(value: Any, where: str) -> list[str]:
    if value is None:
        return [where]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _no_nulls(item, f"{where}.{key}")]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _no_nulls(item, f"{where}[{index}]")]
    return []


@pytest.mark.parametrize("extra", [{}, {"autoscaling": {"enabled": True, "maxReplicas": 4}}])
def test_the_render_sends_what_a_real_run_would_not_a_missing_value(stack: str, extra: dict[str, Any]) -> None:
    # The mock engine must fill in what the provider computes (a service account's email),
    # or the render shows `null` where a real run sends a value.
    render = render_with(stack, **extra) if extra else rendered(stack)
    found = [hole for r in render.resources for hole in _no_nulls(reveal(r.inputs), f"{r.type} {r.name}")]
    assert found == []


def test_iam_members_name_the_service_account_they_grant() -> None:
    render = render_with("dev", autoscaling={"enabled": True, "maxReplicas": 2})
    members = [r for r in render.resources if r.type.endswith("IAMMember") or r.type.endswith("IamMember")]
    assert members
    for member in members:
        assert member.inputs.get("member", "").startswith("serviceAccount:"), member.name


def test_the_keda_operator_identity_annotation_is_an_email() -> None:
    render = render_with("dev", autoscaling={"enabled": True, "maxReplicas": 2})
    chart = next(r for r in render.by_type("kubernetes:helm.sh/v4:Chart") if r.name == "keda")
    rendered_values = json.dumps(reveal(chart.inputs["values"]))
    keda = render.one("gcp:serviceaccount/account:Account", "keda-operator").inputs
    assert f"{keda['accountId']}@llm-serving-dev.iam.gserviceaccount.com" in rendered_values
    assert "null" not in rendered_values and "None" not in rendered_values


def _stateful(render: Render) -> list[Registration]:
    return [
        *render.by_type("gcp:container/cluster:Cluster"),
        *render.by_type("gcp:compute/network:Network"),
        *render.by_type("gcp:compute/subnetwork:Subnetwork"),
        *render.by_type("kubernetes:core/v1:Namespace"),
        *[r for r in render.by_type(PVC) if r.inputs["spec"]["accessModes"] == ["ReadOnlyMany"]],
        *render.by_type(SNAPSHOT),
    ]


def test_a_production_stack_protects_everything_that_holds_state() -> None:
    render = rendered("prod")
    stateful = _stateful(render)
    assert len(stateful) >= 6
    assert [r.name for r in stateful if not r.protect] == []


def test_a_stack_that_is_not_production_can_be_destroyed() -> None:
    assert [r.name for r in rendered("dev").resources if r.protect] == []


def test_destroy_of_production_stops_before_deleting_anything() -> None:
    from render.lifecycle import destroy

    outcome = destroy(rendered("prod"))
    assert outcome.deletes == []
    assert {r.type for r in outcome.refused} >= {"gcp:container/cluster:Cluster", SNAPSHOT}
    assert "deletes nothing" in outcome.summary()


def test_destroy_of_dev_deletes_dependents_before_what_they_depend_on() -> None:
    from render.lifecycle import destroy

    render = rendered("dev")
    order = [r.urn for r in destroy(render).deletes]
    assert len(order) == len([r for r in render.resources if r.custom])
    for resource in render.resources:
        for dependency in resource.dependencies:
            if resource.urn in order and dependency in order:
                assert order.index(resource.urn) < order.index(dependency)


def test_the_writable_cache_volume_is_made_by_a_job_and_released_once_the_snapshot_is_ready() -> None:
    render = rendered("dev")
    # Not a Pulumi resource: a refresh after its release would drop it, and the next up create a new disk.
    assert all(r.inputs["spec"]["accessModes"] != ["ReadWriteOnce"] for r in render.by_type(PVC))
    claim = next(r for r in render.by_type(JOB) if r.name.startswith("claim-"))
    download = next(r for r in render.by_type(JOB) if r.name.startswith("download-"))
    snapshot = render.one(SNAPSHOT)
    release = next(r for r in render.by_type(JOB) if r.name.startswith("release-"))
    assert render.depends_on(download, claim) and render.depends_on(snapshot, download) and render.depends_on(release, snapshot)
    claim_command = claim.inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    writer = json.loads(claim_command[-1])
    assert writer["kind"] == "PersistentVolumeClaim" and writer["spec"]["accessModes"] == ["ReadWriteOnce"]
    name = writer["metadata"]["name"]
    # The claim the download fills is the one the snapshot is taken of, and the one the release deletes.
    volumes = download.inputs["spec"]["template"]["spec"]["volumes"]
    assert [v["persistentVolumeClaim"]["claimName"] for v in volumes] == [name]
    assert snapshot.inputs["spec"]["source"]["persistentVolumeClaimName"] == name
    assert release.inputs["spec"]["template"]["spec"]["containers"][0]["command"][-3:] == ["release", "llm-serving", name]
    # The claim is not made again once its snapshot is ready.
    assert claim_command[-4:-1] == ["claim", "llm-serving", snapshot.inputs["metadata"]["name"]]
    role = render.one("kubernetes:rbac.authorization.k8s.io/v1:Role")
    deletes = [rule for rule in role.inputs["rules"] if "delete" in rule["verbs"]]
    assert deletes == [{"apiGroups": [""], "resources": ["persistentvolumeclaims"], "resourceNames": [name], "verbs": ["delete"]}]


def test_the_estimates_count_every_disk_and_snapshot_the_stack_keeps() -> None:
    from plan.estimates import idle_bill
    from plan.stack import plan_stack
    from tests.plan.test_estimates import settings

    items = dict(idle_bill(plan_stack(settings(nodes=0), "test").costing))
    assert set(items) >= {"cluster fee", "model cache disk (Hyperdisk ML, read-only)", "model cache snapshot"}
    assert all(cost is not None and cost > 0 for cost in items.values())


@pytest.mark.parametrize("stack_name", STACKS)
def test_every_stack_creates_from_nothing_with_each_precondition_met(stack_name: str) -> None:
    from render.lifecycle import creation_problems

    assert creation_problems(rendered(stack_name)) == []


def test_the_network_outwaits_gkes_asynchronous_load_balancer_cleanup_on_destroy() -> None:
    render = rendered("gateway")
    subnets = render.by_type("gcp:compute/subnetwork:Subnetwork")
    assert {s.inputs.get("purpose") for s in subnets} >= {"REGIONAL_MANAGED_PROXY"}
    for network in [*subnets, *render.by_type("gcp:compute/network:Network")]:
        assert network.custom_timeouts.get("delete") == "30m", network.name


def test_every_registered_kind_has_its_lifecycle_facts_in_the_reference() -> None:
    from render.engine import PROJECT_ROOT

    facts = (PROJECT_ROOT / "docs" / "reference.md").read_text()
    table = facts[facts.index("## Every resource kind") :]
    renders = [rendered(s) for s in STACKS] + [
        render_with("gateway", autoscaling={"enabled": True, "maxReplicas": 4}, benchmark={"enabled": True}, cluster={"version": "1.33"})
    ]
    kinds = {r.type for render in renders for r in render.resources if r.custom or r.remote}
    missing = sorted(k for k in kinds if f"`{k}`" not in table and f"`{k.split(':', 2)[-1].split('/')[-1]}`" not in table)
    assert missing == []


def test_a_new_model_on_production_is_refused_at_the_old_caches_protected_objects() -> None:
    from render.changes import render_changes

    after = render_with("prod", model={"id": "Qwen/Qwen3.5-27B-FP8", "revision": "a1b2c3d"})
    refused = [c for c in render_changes(rendered("prod"), after) if c.action == "refused"]
    assert {c.type for c in refused} == {PVC, SNAPSHOT}
    assert all("pulumi state unprotect" in " ".join(c.because) for c in refused)
