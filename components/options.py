"""Resource options shared by every component."""

from __future__ import annotations

import pulumi


def child_options(
    parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, provider: pulumi.ProviderResource | None = None
) -> pulumi.ResourceOptions:
    """Options for a component's children, on ``provider`` when given (the cluster's, for Kubernetes).

    Pulumi does not pass a component's ``depends_on`` down to its children, so
    a VPC inside a component that waits for an API would not wait at all.
    """
    return pulumi.ResourceOptions(parent=parent, depends_on=opts.depends_on if opts else None, provider=provider)


def keeping_account_id(opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """``opts`` for a Google service account that keeps the id it was created with: an id the plan derives
    differently later (a hash past 30 characters, a per-cluster name) would otherwise replace the account.
    Whatever names the account reads its email, so it follows the kept one."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["accountId"]))


# How long `pulumi up` waits beyond the time an object is given itself (a
# Job's deadline, a replica's cold start): a node to provision (5-6 min on
# Autopilot) and slack, so the object, not the await, decides how it ends.
AWAIT_MARGIN_MINUTES = 10


def awaits_beyond(minutes: int) -> pulumi.CustomTimeouts:
    """Create and update timeouts ``AWAIT_MARGIN_MINUTES`` beyond ``minutes``."""
    wait = f"{minutes + AWAIT_MARGIN_MINUTES}m"
    return pulumi.CustomTimeouts(create=wait, update=wait)


# GKE's NEG and Gateway controllers delete their load-balancer pieces asynchronously after the
# cluster's objects go; a subnet or VPC still in use refuses deletion (hashicorp/terraform-provider-google#7637).
NETWORK_DELETE_TIMEOUT = pulumi.CustomTimeouts(delete="30m")
