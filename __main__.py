"""Composition root: stack config -> components -> outputs."""

import pulumi
import pulumi_gcp as gcp

from components.apis import BASE_APIS, ProjectApis
from components.cluster import Cluster
from components.network import Network
from stacks.loading import load

stack = load()
settings = stack.settings

gcp_provider = gcp.Provider("gcp", project=settings.project, region=settings.region, zone=settings.zone)

apis = ProjectApis("apis", settings.project, BASE_APIS, opts=pulumi.ResourceOptions(providers=[gcp_provider]))
network = Network(
    "network",
    settings.network,
    project=settings.project,
    region=settings.region,
    opts=pulumi.ResourceOptions(providers=[gcp_provider], depends_on=[apis]),
)
cluster = Cluster(
    "cluster",
    settings.cluster,
    network=network,
    project=settings.project,
    region=settings.region,
    labels=stack.labels,
    opts=pulumi.ResourceOptions(providers=[gcp_provider], depends_on=[apis]),
)

pulumi.export("clusterName", cluster.name)
pulumi.export("clusterEndpoint", cluster.endpoint)
pulumi.export("region", settings.region)
