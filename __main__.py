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
            *([ModelCache] if any(model.cache for model in specs.served) else []),
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
# One replica set per model; the components of a one-model stack keep their names (renaming would replace them).
several = len(specs.served) > 1
caches: dict[str, ModelCache] = {}
for model in specs.served:
    if model.cache:
        caches[model.name] = ModelCache(
            f"model-cache-{model.name}" if several else "model-cache",
            model.cache,
            hf_token=credentials.hf_token,
            secrets=credentials.resources,
            kubernetes=cluster.provider,
            shared=next(iter(caches.values()), None),
            opts=in_cluster,
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
served = {
    model.name: Replicas(
        f"replicas-{model.name}" if several else "replicas",
        model.replicas,
        hf_token=credentials.hf_token,
        api_key=credentials.api_key,
        kubernetes=cluster.provider,
        opts=pulumi.ResourceOptions.merge(
            in_cluster,
            pulumi.ResourceOptions(depends_on=[r for r in (caches.get(model.name), compile_cache, credentials) if r]),
        ),
    )
    for model in specs.served
}
replicas = served[specs.replicas.name]

if specs.autoscaling:
    autoscaling = Autoscaling(
        "autoscaling",
        specs.autoscaling,
        kubernetes=cluster.provider,
        scaled=[model.autoscaling for model in specs.served if model.autoscaling] if several else (),
        opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[apis, *served.values()])),
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
        opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[cluster.namespace, *served.values()])),
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
pulumi.export("serving", specs.outputs.serving)
if several:
    # Each model's URL and served name are in serving's models; its figures by its short name.
    pulumi.export("servedNames", [model.replicas.served_name for model in specs.served])
    pulumi.export("estimates", {model.name: model.estimate.as_output() for model in specs.served})
    if specs.total is not None:
        pulumi.export("estimatesTotal", specs.total.as_output())
    pulumi.export("engineMemory", {model.name: model.engine_memory.as_output() for model in specs.served})
else:
    pulumi.export("serviceUrl", replicas.url)
    pulumi.export("estimates", specs.estimate.as_output())
    pulumi.export("engineMemory", specs.engine_memory.as_output())
