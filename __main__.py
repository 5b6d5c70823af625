"""Composition root: stack config -> components -> outputs."""

import pulumi
import pulumi_gcp as gcp

from components.apis import BASE_APIS, GATEWAY_APIS, ProjectApis
from components.benchmark import Benchmark
from components.capacity import Capacity
from components.cluster import Cluster
from components.credentials import Credentials
from components.gateway import InferenceGateway
from components.model_cache import ModelCache
from components.network import Network
from components.proxy_subnet import ProxySubnet
from components.replicas import ReplicaSet
from stacks.estimates import estimate
from stacks.loading import load

stack = load()
settings = stack.settings
labels = stack.labels
gateway_routing = settings.routing == "gateway"

gcp_provider = gcp.Provider("gcp", project=settings.project, region=settings.region, zone=settings.zone)
on_gcp = pulumi.ResourceOptions(providers=[gcp_provider])

apis = ProjectApis("apis", settings.project, BASE_APIS + (GATEWAY_APIS if gateway_routing else ()), opts=on_gcp)
after_apis = pulumi.ResourceOptions.merge(on_gcp, pulumi.ResourceOptions(depends_on=[apis]))
network = Network("network", settings.network, project=settings.project, region=settings.region, opts=after_apis)
cluster = Cluster(
    "cluster", settings.cluster, network=network, project=settings.project, region=settings.region, labels=labels, opts=after_apis
)

# Everything below lives in the cluster, in its workload namespace.
in_cluster = pulumi.ResourceOptions.merge(on_gcp, pulumi.ResourceOptions(depends_on=[cluster.namespace]))
capacity = Capacity("capacity", settings, labels=labels, kubernetes=cluster.provider, opts=in_cluster)
credentials = Credentials(
    "credentials",
    namespace=settings.cluster.namespace,
    labels=labels,
    hf_token=stack.secrets.hf_token,
    api_key=stack.secrets.api_key,
    kubernetes=cluster.provider,
    opts=in_cluster,
)
cache = (
    ModelCache("model-cache", settings, labels=labels, credentials=credentials, kubernetes=cluster.provider, opts=in_cluster)
    if settings.cache.enabled
    else None
)
replicas = ReplicaSet(
    "replicas",
    settings,
    stack=stack.name,
    labels=labels,
    scheduling=capacity.scheduling,
    cache_claim=cache.claim_name if cache else None,
    cache_path=cache.model_path if cache else None,
    hf_token=credentials.hf_token,
    api_key=credentials.api_key,
    kubernetes=cluster.provider,
    opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[r for r in (cache, credentials) if r])),
)

gateway: InferenceGateway | None = None
if gateway_routing:
    proxy_subnet = ProxySubnet(
        "proxy-subnet",
        settings.gateway,
        network=network,
        network_name=settings.network.name,
        project=settings.project,
        region=settings.region,
        opts=after_apis,
    )
    gateway = InferenceGateway(
        "gateway",
        settings,
        stack=stack.name,
        labels=labels,
        prerequisites=[apis.services[GATEWAY_APIS[0]], proxy_subnet],
        kubernetes=cluster.provider,
        opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[cluster.namespace, replicas])),
    )
    pulumi.export("gatewayAddress", gateway.address)

if settings.benchmark.enabled and settings.nodes > 0:
    # Measures what clients see: through the Gateway in gateway mode, else the Service.
    benchmark = Benchmark(
        "benchmark",
        settings,
        base_url=gateway.address.apply(lambda address: f"http://{address}") if gateway else replicas.url,
        labels=labels,
        api_key=credentials.api_key,
        hf_token=credentials.hf_token,
        kubernetes=cluster.provider,
        opts=pulumi.ResourceOptions.merge(
            in_cluster, pulumi.ResourceOptions(depends_on=[replicas, credentials, *([gateway] if gateway else [])])
        ),
    )
    pulumi.export("benchmarkJob", benchmark.job_name)

pulumi.export("clusterName", cluster.name)
pulumi.export("clusterEndpoint", cluster.endpoint)
pulumi.export("region", settings.region)
pulumi.export("serviceUrl", replicas.url)
pulumi.export(
    "serving",
    {
        "nodes": settings.nodes,
        "gpus": settings.nodes * settings.serving.data_parallel_size,
        "capacity": settings.capacity.mode,
        "routing": settings.routing,
        "model": f"{settings.model.id}@{settings.model.revision}",
        "image": settings.serving.image,
    },
)
pulumi.export("estimates", estimate(settings, capacity.scheduling.price_per_node_hour).as_output())
