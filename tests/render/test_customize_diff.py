"""google-beta's CustomizeDiff functions that can replace a resource, as render/customize_diff.py models them.

The cases are the Go functions' own behaviour (google-beta at the commit the vendored file names), written per case.
"""

from __future__ import annotations

from typing import Any

import pytest

from dev.provider_schema import RESOURCES, custom_diff_entries, customize_diff, read_resource
from render.changes import Change, changes
from render.customize_diff import CONDITIONS, FUNCTIONS, rules, value_at, vendored

SUBNET = "gcp:compute/subnetwork:Subnetwork"
CLUSTER = "gcp:container/cluster:Cluster"
BUCKET = "gcp:storage/bucket:Bucket"


def classify(type_: str, before: dict[str, Any], after: dict[str, Any]) -> Change:
    def record(inputs: dict[str, Any]) -> dict[str, Any]:
        return {"key": f"k::{type_}", "type": type_, "name": "x", "inputs": inputs, "ignoreChanges": [], "replaceOnChanges": []}

    (change,) = changes([record(before)], [record(after)])
    return change


def test_every_gcp_type_the_program_registers_has_its_customize_diff_functions_listed() -> None:
    assert set(vendored()) == set(RESOURCES)


def test_every_customize_diff_entry_that_can_force_new_has_a_model() -> None:
    can_force = [
        entry.get("condition") or entry["function"]
        for listed in vendored().values()
        for entry in listed["customizeDiff"]
        if "condition" in entry or "forcesNew" in entry
    ]
    assert can_force, "the vendored file lists no rule: the generator lost them"
    assert set(can_force) == set(CONDITIONS) | set(FUNCTIONS)


@pytest.mark.parametrize(
    ("old", "new", "action"),
    [
        ("10.0.0.0/20", "10.16.0.0/20", "replace"),  # elsewhere
        ("10.0.0.0/20", "10.0.0.0/21", "replace"),  # a shrink
        ("10.0.0.0/20", "10.0.8.0/19", "update"),  # the /19 holding the old /20 (its host bits ignored, as net.ParseCIDR does)
        ("10.0.0.0/20", "10.0.0.0/16", "update"),
        ("10.0.0.0/31", "10.0.0.1/32", "replace"),  # holds the last address, not the first
        ("10.0.0.0/31", "10.0.0.0/32", "replace"),  # holds the first address, not the last
        ("10.0.0.1/20", "10.16.0.0/20", "replace"),  # host bits on either side are ignored, as net.ParseCIDR does
        ("10.0.0.0/20", "10.16.0.1/20", "replace"),
        ("10.0.0.0/20", "not a range", "update"),  # unreadable: the provider's own validation refuses it, this forces nothing
    ],
)
def test_a_subnet_range_is_updated_only_when_the_new_one_holds_the_old(old: str, new: str, action: str) -> None:
    change = classify(SUBNET, {"name": "s", "ipCidrRange": old}, {"name": "s", "ipCidrRange": new})
    assert change.action == action, change.line()


def test_a_cluster_feature_turned_off_replaces_and_turned_on_updates() -> None:
    on, off = {"name": "c", "enableL4IlbSubsetting": True}, {"name": "c", "enableL4IlbSubsetting": False}
    assert classify(CLUSTER, on, off).action == "replace"
    assert classify(CLUSTER, off, on).action == "update"
    assert classify(CLUSTER, {"name": "c", "enableFqdnNetworkPolicy": True}, {"name": "c"}).action == "update"  # unset: no condition


def test_a_beta_api_removed_from_a_cluster_replaces_it_and_one_added_updates_it() -> None:
    def cluster(*apis: str) -> dict[str, Any]:
        return {"name": "c", "enableK8sBetaApis": {"enabledApis": list(apis)}}

    assert classify(CLUSTER, cluster("a/v1beta1", "b/v1beta1"), cluster("a/v1beta1")).action == "replace"
    assert classify(CLUSTER, cluster("a/v1beta1"), cluster("a/v1beta1", "b/v1beta1")).action == "update"
    # One API for another (a change inside the list), and the whole block removed, both remove one.
    assert classify(CLUSTER, cluster("a/v1beta1"), cluster("b/v1beta1")).action == "replace"
    assert classify(CLUSTER, cluster("a/v1beta1"), {"name": "c"}).action == "replace"


def test_an_autopilot_clusters_additive_dns_domain_replaces_it_and_a_standard_clusters_does_not() -> None:
    def cluster(autopilot: bool, domain: str) -> dict[str, Any]:
        return {"name": "c", "enableAutopilot": autopilot, "dnsConfig": {"additiveVpcScopeDnsDomain": domain}}

    assert classify(CLUSTER, cluster(True, "a.example"), cluster(True, "b.example")).action == "replace"
    assert classify(CLUSTER, cluster(False, "a.example"), cluster(False, "b.example")).action == "update"


def test_unlocking_a_buckets_retention_policy_replaces_it_and_locking_updates_it() -> None:
    locked, unlocked = {"name": "b", "retentionPolicy": {"isLocked": True}}, {"name": "b", "retentionPolicy": {"isLocked": False}}
    assert classify(BUCKET, locked, unlocked).action == "replace"
    assert classify(BUCKET, unlocked, locked).action == "update"


def test_a_replacement_says_why_and_cites_the_go_function_and_its_file() -> None:
    change = classify(SUBNET, {"name": "s", "ipCidrRange": "10.0.0.0/20"}, {"name": "s", "ipCidrRange": "10.16.0.0/20"})
    assert change.because == (
        "ipCidrRange (the new range does not hold the old one: google-beta/services/compute/resource_compute_subnetwork.go "
        "IsShrinkageIpCidr)",
    )


def test_a_value_is_read_at_its_dotted_path_and_missing_below_a_plain_value() -> None:
    assert value_at({"a": {"b": 1}}, "a.b") == 1
    assert value_at({"a": "x"}, "a.b") is None
    assert value_at({}, "a.b") is None


def test_a_rule_names_its_go_function_and_file() -> None:
    (rule,) = rules(SUBNET)
    assert (rule.field, rule.function) == ("ipCidrRange", "IsShrinkageIpCidr")
    assert rule.source == "google-beta/services/compute/resource_compute_subnetwork.go"


GO_RESOURCE = """
package compute

func ResourceThing() *schema.Resource {
	return &schema.Resource{
		CustomizeDiff: customdiff.All(
			customdiff.ForceNewIfChange("ip_cidr_range", IsShrinkageIpCidr),
			thingCustomDiff,
			tpgresource.DefaultProviderProject,
		),
		Schema: map[string]*schema.Schema{
			"ip_cidr_range": {Type: schema.TypeString, Required: true},
			"dns_config": {Type: schema.TypeList, MaxItems: 1, Optional: true, Elem: &schema.Resource{
				Schema: map[string]*schema.Schema{"domain": {Type: schema.TypeString, Optional: true}},
			}},
		},
	}
}

func thingCustomDiff(_ context.Context, d *schema.ResourceDiff, meta interface{}) error {
	return thingCustomDiffFunc(d)
}

func thingCustomDiffFunc(d tpgresource.TerraformResourceDiff) error {
	if d.HasChange("dns_config.0.domain") {
		return d.ForceNew("dns_config.0.domain")
	}
	return nil
}
"""
GO_SHARED = """
package tpgresource

func DefaultProviderProject(_ context.Context, diff *schema.ResourceDiff, meta interface{}) error {
	return diff.SetNew("project", "p")
}
"""


def test_the_generator_reads_force_new_conditions_and_functions_that_force_new_through_their_callees() -> None:
    sources = {"google-beta/services/compute/thing.go": GO_RESOURCE, "google-beta/tpgresource/utils.go": GO_SHARED}
    schema = read_resource([GO_RESOURCE], ["ResourceThing"])
    entries = custom_diff_entries(customize_diff(GO_RESOURCE, "ResourceThing"), sources, schema)
    assert entries == [
        {"call": "customdiff.ForceNewIfChange", "field": "ipCidrRange", "condition": "IsShrinkageIpCidr"},
        {"function": "thingCustomDiff", "forcesNew": ["dnsConfig.domain"]},
        {"function": "tpgresource.DefaultProviderProject"},
    ]
