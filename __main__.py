"""Composition root: stack config -> plan -> components -> outputs."""

import pulumi
import pulumi_gcp as gcp

from components.apis import ProjectApis, required_apis
from components.autoscaling import Autoscaling
from components.batch import Batch
from components.benchmark import Benchmark
from components.capacity import Capacity
from components.cluster import Cluster
from components.compile_cache import CompileCache
from components.credentials import Credentials
from components.gateway import InferenceGateway
from components.model_cache import ModelCache
from components.network import Network
from components.observability import Observability
from components.proxy_subnet import ProxySubnet
from components.registry import ImageRegistry
from components.replicas import Replicas
from plan.stack import plan_stack
from stacks.loading import load

stack = load()
for warning in stack.warnings:
    pulumi.log.warn(warning)
specs = plan_stack(stack.settings, stack.name)

gcp_provider = gcp.Provider("gcp", project=specs.provider.project, region=specs.provider.region, zone=specs.provider.zone)
on_gcp = pulumi.ResourceOptions(providers=[gcp_provider])

# The APIs follow from the components the plan registers; the render checks each resource against them.
apis = ProjectApis(
    "apis",
    specs.apis,
    apis=required_apis(
        [
            Network,
            Cluster,
            Capacity,
            *([ModelCache] if specs.cache else []),
            *([CompileCache] if specs.compile_cache else []),
            *([ImageRegistry] if specs.registry else []),
            *([Autoscaling] if specs.autoscaling else []),
            *([Batch] if specs.batch else []),
            *([ProxySubnet, InferenceGateway] if specs.gateway else []),
            *([Observability] if specs.observability else []),
        ]
    ),
    opts=on_gcp,
)
after_apis = pulumi.ResourceOptions.merge(on_gcp, pulumi.ResourceOptions(depends_on=[apis]))
network = Network("network", specs.network, opts=after_apis)
cluster = Cluster("cluster", specs.cluster, network=network.vpc.id, subnetwork=network.subnet.id, opts=after_apis)
if specs.registry:
    ImageRegistry("registry", specs.registry, reader=cluster.node_identity.member, opts=after_apis)

# Everything below lives in the cluster, in its workload namespace.
in_cluster = pulumi.ResourceOptions.merge(on_gcp, pulumi.ResourceOptions(depends_on=[cluster.namespace]))
# A created future reservation is a Compute Engine resource: it waits for that API as well.
Capacity(
    "capacity",
    specs.capacity,
    kubernetes=cluster.provider,
    opts=pulumi.ResourceOptions.merge(on_gcp, pulumi.ResourceOptions(depends_on=[apis, cluster.namespace])),
)
credentials = Credentials(
    "credentials",
    specs.credentials,
    hf_token=stack.secrets.hf_token,
    api_key=stack.secrets.api_key,
    kubernetes=cluster.provider,
    opts=in_cluster,
)
cache = (
    ModelCache(
        "model-cache",
        specs.cache,
        hf_token=credentials.hf_token,
        secrets=credentials.resources,
        kubernetes=cluster.provider,
        opts=in_cluster,
    )
    if specs.cache
    else None
)
compile_cache = (
    CompileCache(
        "compile-cache",
        specs.compile_cache,
        kubernetes=cluster.provider,
        # Google resources first need their APIs; the service account, the namespace.
        opts=pulumi.ResourceOptions.merge(on_gcp, pulumi.ResourceOptions(depends_on=[apis, cluster.namespace])),
    )
    if specs.compile_cache
    else None
)
replicas = Replicas(
    "replicas",
    specs.replicas,
    hf_token=credentials.hf_token,
    api_key=credentials.api_key,
    kubernetes=cluster.provider,
    opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[r for r in (cache, compile_cache, credentials) if r])),
)

if specs.autoscaling:
    autoscaling = Autoscaling(
        "autoscaling",
        specs.autoscaling,
        kubernetes=cluster.provider,
        opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[apis, replicas])),
    )
    if specs.batch:
        batch = Batch(
            "batch",
            specs.batch,
            keda_identity=autoscaling.identity.member,
            keda=autoscaling.chart,
            api_key=credentials.api_key,
            kubernetes=cluster.provider,
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[apis, *credentials.resources])),
        )
        pulumi.export("batchBucket", batch.bucket_name)

gateway: InferenceGateway | None = None
if specs.gateway and specs.proxy_subnet:
    proxy_subnet = ProxySubnet("proxy-subnet", specs.proxy_subnet, network=network.vpc.id, opts=after_apis)
    gateway = InferenceGateway(
        "gateway",
        specs.gateway,
        prerequisites=[*(apis.services[api] for api in InferenceGateway.USES), proxy_subnet],
        kubernetes=cluster.provider,
        opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[cluster.namespace, replicas])),
    )
    pulumi.export("gatewayAddress", gateway.address)

if specs.benchmark:
    # Measures what clients see: through the Gateway in gateway mode, else the Service.
    benchmark = Benchmark(
        "benchmark",
        specs.benchmark,
        base_url=gateway.address.apply(lambda address: f"http://{address}") if gateway else replicas.url,
        api_key=credentials.api_key,
        hf_token=credentials.hf_token,
        kubernetes=cluster.provider,
        opts=pulumi.ResourceOptions.merge(
            in_cluster, pulumi.ResourceOptions(depends_on=[replicas, credentials, *([gateway] if gateway else [])])
        ),
    )
    pulumi.export("benchmarkJob", benchmark.job_name)

if specs.observability:
    observability = Observability("observability", specs.observability, opts=after_apis)
    pulumi.export("dashboardUrl", observability.dashboard_url)

pulumi.export("clusterName", cluster.name)
pulumi.export("clusterEndpoint", cluster.endpoint)
pulumi.export("region", specs.outputs.region)
pulumi.export("vllmVersion", specs.outputs.vllm_version)
pulumi.export("serviceUrl", replicas.url)
pulumi.export("serving", specs.outputs.serving)
pulumi.export("estimates", specs.estimate.as_output())
if specs.engine_memory:
    pulumi.export("engineMemory", specs.engine_memory.as_output())
