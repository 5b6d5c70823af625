"""A stack of several models: one replica set, cache, estimate and set of alerts per model; the rest once."""

from __future__ import annotations

from components.observability import alerts, charts
from components.replicas import deployment, pod_template, service
from facts.naming import REPLICAS
from plan.stack import StackPlan, plan_stack
from tests.stacks.handed import parsed

MODELS = [
    {"id": "Qwen/Qwen3.5-27B-FP8", "nodes": 2},
    {"id": "Qwen/Qwen3-Embedding-8B", "nodes": 1, "servedName": "embedder", "serving": {"maxModelLen": 8192}},
]


def several() -> StackPlan:
    return plan_stack(parsed(models=MODELS, capacity={"mode": "spot"}), "rag")


def test_each_model_has_its_own_replica_set_named_from_its_id_and_picked_by_its_own_labels() -> None:
    plan = several()
    names = [model.name for model in plan.served]
    assert names == ["qwen3-5-27b-fp8", "qwen3-embedding-8b"]
    generator, embedder = (model.replicas for model in plan.served)
    assert (generator.replicas, embedder.replicas) == (2, 1)
    # Two Deployments that picked each other's pods would mix the models behind one Service.
    assert generator.selector != embedder.selector
    assert service(embedder)["spec"]["selector"] == deployment(embedder, {})["spec"]["selector"]["matchLabels"] == embedder.selector
    assert embedder.url == "http://qwen3-embedding-8b.llm-serving.svc.cluster.local:8000/v1"
    command = pod_template(embedder, hf_token=None, api_key=None)["spec"]["containers"][0]["command"]
    assert {"--served-model-name=embedder", "--max-model-len=8192"} <= set(command)


def test_each_model_has_its_own_cache_and_shares_the_compile_caches_bucket() -> None:
    plan = several()
    caches = [model.cache for model in plan.served]
    assert [cache.model_id for cache in caches if cache] == ["Qwen/Qwen3.5-27B-FP8", "Qwen/Qwen3-Embedding-8B"]
    assert len({cache.names.reader for cache in caches if cache}) == 2
    mounts = {model.replicas.compile_cache for model in plan.served}
    assert len(mounts) == 1 and plan.compile_cache is not None


def test_the_outputs_list_each_models_served_name_url_and_its_own_estimate() -> None:
    plan = several()
    models = plan.outputs.serving["models"]
    assert isinstance(models, dict)
    assert models["qwen3-embedding-8b"]["servedName"] == "embedder"
    assert models["qwen3-5-27b-fp8"]["serviceUrl"] == "http://qwen3-5-27b-fp8.llm-serving.svc.cluster.local:8000/v1"
    assert models["qwen3-5-27b-fp8"]["gpus"] == 16
    generator, embedder = plan.served
    # The embedding model generates no tokens: no tokens/s is estimated for it, as for a one-model embedding stack.
    assert generator.estimate.tokens_per_second and embedder.estimate.tokens_per_second is None
    assert embedder.estimate.cold_start is not None


def test_each_models_alerts_and_charts_read_only_its_own_series() -> None:
    spec = several().observability
    assert spec is not None
    found = {alert.name: alert.query for alert in alerts(spec)}
    assert 'model_name="embedder"' in found["queue-depth-qwen3-embedding-8b"]
    assert 'model_name="Qwen/Qwen3.5-27B-FP8"' in found["queue-depth-qwen3-5-27b-fp8"]
    assert 'deployment="qwen3-embedding-8b"' in found["replicas-not-ready-qwen3-embedding-8b"]
    titles = [title for title, _ in charts(spec)]
    assert "qwen3-embedding-8b: Requests running, waiting" in titles
    assert "qwen3-5-27b-fp8: Replicas: ready, desired" in titles


def test_a_one_model_stack_keeps_its_replica_set_named_vllm() -> None:
    plan = plan_stack(parsed(), "dev")
    assert [model.name for model in plan.served] == [REPLICAS]
    assert plan.replicas.name == REPLICAS
