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
