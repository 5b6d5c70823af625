"""google-beta's schema checks, offline: what pulumi-gcp refuses in its Check step, before any resource changes."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dev.provider_schema import RESOURCES, read_resource
from render.engine import Render, Secret
from render.provider_rules import CONSTRAINTS, ProviderConstraintError, check_provider, constraints, provider_problems, resource_problems
from tests.conftest import STACKS, render_with, rendered

EXCLUSION = {"name": "batch", "startTime": "2026-02-01T00:00:00Z", "endTime": "2026-02-05T00:00:00Z"}
WINDOW = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T08:00:00Z"}
# Every optional part that registers more GCP resources or fills more of the cluster's inputs.
VARIANTS: dict[str, dict[str, Any]] = {
    "everything-on": {
        "autoscaling": {"enabled": True},
        "benchmark": {"enabled": True},
        "observability": {"enabled": True, "notificationChannels": ["projects/example-project/notificationChannels/1"]},
        "registry": {"enabled": True},
        "cluster": {
            "deletionProtection": False,
            "authorizedNetworks": ["203.0.113.0/24"],
            "maintenance": {"window": WINDOW, "exclusions": [EXCLUSION]},
        },
    },
    "future-reservation": {
        "capacity": {
            "mode": "reservation",
            "reservation": {
                "name": "a4-llm-serving",
                "create": {"name": "a4-llm-serving", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z", "nodes": 16},
            },
        }
    },
    "existing-proxy-subnet": {"routing": "gateway", "gateway": {"existingProxySubnet": "proxy-only"}},
}


def cluster_render(**inputs: Any) -> Render:
    """The dev stack with the cluster's inputs changed (``None`` removes one)."""
    render = rendered("dev")
    cluster = render.one("gcp:container/cluster:Cluster")
    changed = copy.deepcopy(cluster.inputs)
    for key, value in inputs.items():
        if value is None:
            changed.pop(key, None)
        else:
            changed[key] = value
    return Render(stack="dev", resources=[replace(cluster, inputs=changed)])


def only_problem(render: Render) -> str:
    found = provider_problems(render)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_meets_the_provider_schema(stack: str) -> None:
    assert provider_problems(rendered(stack)) == []


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_config_variant_meets_the_provider_schema(variant: str) -> None:
    render = render_with("dev", **VARIANTS[variant])
    assert check_provider(render) == sum(r.type.startswith("gcp:") for r in render.resources) > 0


def test_the_rules_cover_every_gcp_type_the_program_registers() -> None:
    types = {r.type for name in VARIANTS for r in render_with("dev", **VARIANTS[name]).resources if r.type.startswith("gcp:")}
    types |= {r.type for stack in STACKS for r in rendered(stack).resources if r.type.startswith("gcp:")}
    assert types <= set(constraints()["resources"]) == set(RESOURCES)


def test_exclusions_without_a_window_are_caught_by_the_provider_check() -> None:
    # google-beta: exactly one of the window kinds once maintenance_policy is set (resource_container_cluster.go).
    # The settings refuse this too (tests/stacks/test_platform_rules.py); the check stands on its own.
    render = cluster_render(maintenancePolicy={"maintenanceExclusions": [{**EXCLUSION, "exclusionName": "batch"}]})
    problem = only_problem(render)
    assert problem.startswith("gcp:container/cluster:Cluster gke: maintenancePolicy: exactlyOneOf:"), problem
    assert "maintenancePolicy.recurringWindow" in problem and "maintenancePolicy.dailyMaintenanceWindow" in problem
    with pytest.raises(ProviderConstraintError, match="1 provider constraint problem"):
        check_provider(render)


@pytest.mark.parametrize(
    ("start", "reason"),
    [
        ("2026-02-30T02:00:00Z", "is not a real instant"),
        ("2026-01-03T24:00:00Z", "is not a real instant"),
        ("2026-01-03 02:00:00Z", "RFC 3339"),
    ],
)
def test_a_window_time_that_is_no_instant_is_refused(start: str, reason: str) -> None:
    policy = {"recurringWindow": {**WINDOW, "startTime": start, "recurrence": "FREQ=DAILY"}}
    problem = only_problem(cluster_render(maintenancePolicy=policy))
    assert f"maintenancePolicy.recurringWindow.startTime = {start!r}" in problem and reason in problem


@pytest.mark.parametrize("cidr", ["203.0.113.5", "203.0.113.0/255.255.255.0", "203.0.113.5/24", "203.0.113.0/33", "203.0.113.0/+24"])
def test_an_authorized_network_the_provider_cidr_check_refuses_is_refused(cidr: str) -> None:
    networks = {"cidrBlocks": [{"cidrBlock": "198.51.100.0/24"}, {"cidrBlock": cidr}]}
    problem = only_problem(cluster_render(masterAuthorizedNetworksConfig=networks))
    assert f"masterAuthorizedNetworksConfig.cidrBlocks[1].cidrBlock = {cidr!r}" in problem


# A planted violation of each class, on the dev stack's cluster: (inputs changed, text the one problem must hold).
PLANTED: dict[str, tuple[dict[str, Any], str]] = {
    "exactlyOneOf": (
        {
            "maintenancePolicy": {
                "recurringWindow": {**WINDOW, "recurrence": "FREQ=DAILY"},
                "dailyMaintenanceWindow": {"startTime": "03:00"},
            }
        },
        "maintenancePolicy: exactlyOneOf: only one of",
    ),
    "conflictsWith": (
        {"clusterIpv4Cidr": "10.0.0.0/14"},
        "clusterIpv4Cidr = '10.0.0.0/14': conflictsWith: clusterIpv4Cidr is set, so ipAllocationPolicy",
    ),
    "atLeastOneOf": ({"addonsConfig": {}}, "addonsConfig: atLeastOneOf: one of addonsConfig."),
    "enum": ({"releaseChannel": {"channel": "FAST"}}, "releaseChannel.channel = 'FAST': is not one of 'UNSPECIFIED', 'RAPID'"),
    "range": (
        {"clusterAutoscaling": {"autoProvisioningDefaults": {"diskSize": 5}}},
        "clusterAutoscaling.autoProvisioningDefaults.diskSize = 5: is outside 10..",
    ),
    "pattern": ({"desiredEmulatedVersion": "1.35.0"}, "desiredEmulatedVersion = '1.35.0': does not match"),
    "rfc3339": ({"maintenancePolicy": {"dailyMaintenanceWindow": {"startTime": "3:00"}}}, "startTime = '3:00': is not an HH:MM time"),
    "cidr": ({"masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.7"}]}}, "cidrBlock = '203.0.113.7'"),
    "maxItems": (
        {"maintenancePolicy": {"recurringWindow": {**WINDOW, "recurrence": "FREQ=DAILY"}, "maintenanceExclusions": [EXCLUSION] * 21}},
        "maxItems",
    ),
    "required": (
        {"maintenancePolicy": {"recurringWindow": {"startTime": WINDOW["startTime"], "endTime": WINDOW["endTime"]}}},
        "recurrence: required",
    ),
}


@pytest.mark.parametrize("rule", sorted(PLANTED))
def test_a_planted_violation_of_each_class_fails_naming_the_field(rule: str) -> None:
    inputs, text = PLANTED[rule]
    found = provider_problems(cluster_render(**inputs))
    assert found, f"{rule} not caught"
    assert all(p.endswith("(google-beta/services/container/resource_container_cluster.go)") for p in found), found
    assert any(text in p for p in found), found


def test_a_secret_input_is_checked_as_its_value_and_an_unknown_one_is_not() -> None:
    secret = cluster_render(releaseChannel=Secret({"channel": "FAST"}))
    assert "releaseChannel.channel = 'FAST'" in only_problem(secret)
    unknown = cluster_render(releaseChannel={"channel": None}, maintenancePolicy={"recurringWindow": None})
    assert provider_problems(unknown) == []


def test_a_gcp_type_without_rules_is_named_not_passed() -> None:
    cluster = rendered("dev").one("gcp:container/cluster:Cluster")
    unknown = replace(cluster, type="gcp:compute/instance:Instance")
    assert resource_problems(unknown) == [
        "gcp:compute/instance:Instance gke: no provider rules for this type; regenerate constraints/gcp.yaml (docs/provider.md)"
    ]


def test_the_rules_carry_their_provenance() -> None:
    head = CONSTRAINTS.read_text().splitlines()[:3]
    assert "hashicorp/terraform-provider-google-beta" in head[1] and "MPL-2.0" in head[2] and "facts only" in head[2]
    assert re.fullmatch(r"[0-9a-f]{40}", constraints()["commit"])


# A schema written for this test, in google-beta's style: every extractor on one resource.
GO_SNIPPET = """
package example

var (
    peerKeys = []string{"peering.0.left", "peering.0.right"}
    ruleSchema = &schema.Resource{
        Schema: map[string]*schema.Schema{
            "cidr_range": {Type: schema.TypeString, Required: true, ValidateFunc: validation.IsCIDRNetwork(8, 24)},
        },
    }
)

func ResourceExampleThing() *schema.Resource {
    return &schema.Resource{
        Identity: &schema.ResourceIdentity{
            SchemaFunc: func() map[string]*schema.Schema { return map[string]*schema.Schema{"ignored": {Type: schema.TypeString}} },
        },
        Schema: map[string]*schema.Schema{
            "name": {Type: schema.TypeString, Required: true, ForceNew: true, ValidateFunc: verify.ValidateGCEName},
            "tier": {
                Type: schema.TypeString, Optional: true, // a comment with { braces }
                ValidateFunc: verify.ValidateEnum([]string{"BASIC", "PREMIUM", ""}),
            },
            "mode": {Type: schema.TypeString, Optional: true, ValidateFunc: validation.StringInSlice([]string{"fast", "slow"}, true)},
            "size": {
                Type: schema.TypeInt, Optional: true,
                ValidateFunc: validation.IntBetween(1, 64), ConflictsWith: []string{"auto_size"},
            },
            "auto_size": {Type: schema.TypeBool, Optional: true, RequiredWith: []string{"name"}},
            "replicas": {Type: schema.TypeInt, Optional: true, ValidateDiagFunc: validation.ToDiagFunc(validation.IntAtLeast(2))},
            "label": {
                Type: schema.TypeString, Optional: true,
                ValidateFunc: validation.StringMatch(regexp.MustCompile(`^[a-z]+$`), "lower case"),
            },
            "start": {Type: schema.TypeString, Optional: true, ValidateFunc: verify.ValidateRFC3339Date},
            "daily": {Type: schema.TypeString, Optional: true, ValidateFunc: verify.ValidateRFC3339Time},
            "range": {Type: schema.TypeString, Optional: true, ValidateFunc: verify.OrEmpty(verify.ValidateIpCidrRange)},
            "odd": {Type: schema.TypeString, Optional: true, ValidateFunc: validateOddly},
            "node_config": schemaNodeConfig(),
            "peering": {
                Type: schema.TypeList, Optional: true, MaxItems: 1,
                Elem: &schema.Resource{
                    Schema: map[string]*schema.Schema{
                        "left": {Type: schema.TypeString, Optional: true, ExactlyOneOf: peerKeys},
                        "right": {
                            Type: schema.TypeString, Optional: true,
                            ExactlyOneOf: peerKeys, AtLeastOneOf: []string{"peering.0.left"},
                        },
                    },
                },
            },
            "rule": {Type: schema.TypeList, Optional: true, MinItems: 1, MaxItems: 5, Elem: ruleSchema},
            "policy": {
                Type: schema.TypeSet, Optional: true,
                Elem: &schema.Schema{Type: schema.TypeString, ValidateFunc: verify.ValidateEnum([]string{"A", "B"})},
            },
        },
    }
}
"""


def test_the_generator_reads_each_kind_of_fact_from_go_source() -> None:
    schema = read_resource([GO_SNIPPET], ["ResourceExampleThing"])
    fields = schema.fields
    assert schema.force_new == ["name"]
    assert fields["name"] == {"required": True, "validate": {"pattern": r"^(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$"}}
    assert fields["tier"] == {"validate": {"enum": ["BASIC", "PREMIUM", ""]}}
    assert fields["mode"] == {"validate": {"enum": ["fast", "slow"], "ignoreCase": True}}
    assert fields["size"] == {"conflictsWith": ["autoSize"], "validate": {"range": {"min": 1, "max": 64}}}
    assert fields["autoSize"] == {"requiredWith": ["name"]}
    assert fields["replicas"] == {"validate": {"range": {"min": 2, "max": None}}}
    assert fields["label"] == {"validate": {"pattern": "^[a-z]+$"}}
    assert fields["start"] == {"validate": {"rfc3339": "date-time"}}
    assert fields["daily"] == {"validate": {"rfc3339": "HH:MM"}}
    assert fields["range"] == {"validate": {"cidr": {}, "allowEmpty": True}}
    # MaxItems 1 is an object in Pulumi: its keys lose the ``.0``; a list field takes a plural name.
    assert fields["peering.left"] == {"exactlyOneOf": ["peering.left", "peering.right"]}
    assert fields["peering.right"]["atLeastOneOf"] == ["peering.left"]
    assert fields["rules"] == {"minItems": 1, "maxItems": 5}
    assert fields["rules.cidrRange"] == {"required": True, "validate": {"cidr": {"network": True, "minPrefix": 8, "maxPrefix": 24}}}
    assert fields["policies"] == {"items": {"enum": ["A", "B"]}}
    assert "ignored" not in fields
    assert schema.unfollowed == {
        "odd": "ValidateFunc: validateOddly",
        "nodeConfig": "its schema is schemaNodeConfig() (not in this file)",
    }


def _sdk_names(module: str) -> set[str]:
    """Property names pulumi-gcp's Python SDK gives a module's resources and their input types."""
    import pulumi_gcp

    names: set[str] = set()
    for path in (Path(pulumi_gcp.__file__).parent / module).glob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r'@pulumi\.getter\(name="(\w+)"\)', text))
        names |= set(re.findall(r"@pulumi\.getter\n\s+def (\w+)\(", text))
    return names


@pytest.mark.parametrize("token", sorted(RESOURCES))
def test_every_generated_path_is_a_name_of_the_pinned_pulumi_gcp(token: str) -> None:
    # The bridge renames (camelCase, plural lists); the SDK the pinned pulumi-gcp (10.2.0) ships is the authority.
    names = _sdk_names(token.split(":")[1].split("/")[0])
    rules = constraints()["resources"][token]
    paths = [
        *rules["fields"],
        *(key for facts in rules["fields"].values() for name in ("exactlyOneOf", "conflictsWith") for key in facts.get(name, [])),
    ]
    unknown = sorted({part for path in paths for part in path.split(".") if not part.isdigit() and part not in names})
    assert unknown == []


def snippet_problems(**inputs: Any) -> list[str]:
    """The checker on the snippet's generated rules: generator and checker end to end."""
    rules = {"source": "example.go", "fields": read_resource([GO_SNIPPET], ["ResourceExampleThing"]).fields}
    thing = replace(rendered("dev").one("gcp:container/cluster:Cluster"), type="gcp:example/thing:Thing", name="thing", inputs=inputs)
    return resource_problems(thing, rules)


def test_the_snippet_rules_catch_required_with_and_the_rest() -> None:
    # google-beta declares no RequiredWith on the resources the program registers; the snippet does.
    assert snippet_problems(name="a", autoSize=True, peering={"left": "x"}) == []
    assert snippet_problems(autoSize=True, peering={"left": "x"}) == [
        "gcp:example/thing:Thing thing: autoSize = True: requiredWith: autoSize is set, so name must be too (example.go)"
    ]
    found = snippet_problems(name="a", size=3, autoSize=True, peering={"left": "x", "right": "y"}, rules=[{"cidrRange": "10.0.0.0/30"}])
    assert [p.split(": ", 2)[1] for p in found] == ["size = 3", "peering", "rules[0].cidrRange = '10.0.0.0/30'"], found
    assert "conflictsWith" in found[0] and "exactlyOneOf: only one of peering.left, peering.right" in found[1]


def test_the_render_command_refuses_what_the_provider_would_refuse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import render.cli as command

    dev = rendered("dev")
    policy = {"maintenanceExclusions": [{**EXCLUSION, "exclusionName": "batch"}]}
    refused = Render(
        "dev",
        [
            replace(r, inputs={**r.inputs, "maintenancePolicy": policy}) if r.type == "gcp:container/cluster:Cluster" else r
            for r in dev.resources
        ],
        dev.outputs,
        dev.invokes,
    )
    monkeypatch.setattr(command, "render_stack", lambda stack: refused)
    with pytest.raises(ProviderConstraintError, match="maintenancePolicy: exactlyOneOf"):
        command.main(["dev", "--out", str(tmp_path)])
