"""The resource options every component shares: children under their component, kept account ids, awaits."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.options import awaits_beyond, child_options, keeping_account_id
from tests.components.alone import registered


class Holder(pulumi.ComponentResource):
    """A component that registers a Google and a Kubernetes child, as the stack's components do."""

    def __init__(self, name: str, kubernetes: k8s.Provider | None, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("test:Holder", name, None, opts)
        gcp.storage.Bucket("bucket", location="EU", opts=child_options(self, opts))
        k8s.core.v1.ConfigMap("config", opts=child_options(self, opts, kubernetes))


def test_a_child_belongs_to_its_component_waits_for_what_it_waits_for_and_uses_the_provider_given() -> None:
    def program() -> None:
        api = gcp.projects.Service("api", service="storage.googleapis.com")
        Holder("holder", k8s.Provider("cluster"), pulumi.ResourceOptions(depends_on=[api]))

    render = registered(program)
    holder, api = render.one("test:Holder").urn, render.one("gcp:projects/service:Service").urn
    bucket, config = render.one("gcp:storage/bucket:Bucket"), render.one("kubernetes:core/v1:ConfigMap")
    for child in (bucket, config):
        assert child.parent == holder and api in child.dependencies, child.name
    assert config.provider.startswith(render.one("pulumi:providers:kubernetes").urn)
    assert not bucket.provider


def test_a_component_without_options_gives_its_children_nothing_to_wait_for() -> None:
    def program() -> None:
        Holder("holder", None)

    render = registered(program)
    for child in (render.one("gcp:storage/bucket:Bucket"), render.one("kubernetes:core/v1:ConfigMap")):
        assert child.parent == render.one("test:Holder").urn and child.dependencies == () and not child.provider, child.name


def test_an_account_keeps_the_id_it_was_created_with_and_its_other_options() -> None:
    def program() -> None:
        api = gcp.projects.Service("api", service="iam.googleapis.com")
        opts = pulumi.ResourceOptions(depends_on=[api], ignore_changes=["displayName"], protect=True)
        gcp.serviceaccount.Account("nodes", account_id="llm-nodes", opts=keeping_account_id(opts))

    render = registered(program)
    account = render.one("gcp:serviceaccount/account:Account", "nodes")
    assert set(account.ignore_changes) == {"displayName", "accountId"} and account.protect
    assert render.one("gcp:projects/service:Service").urn in account.dependencies


def test_an_await_lasts_ten_minutes_beyond_the_objects_own_time_for_create_and_update() -> None:
    timeouts = awaits_beyond(75)
    assert (timeouts.create, timeouts.update, timeouts.delete) == ("85m", "85m", None)
