"""The batch runner of a stack of several models (the rag stack with batches on): one runner, every model's table."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import render_with

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
GENERATOR = {"id": "Qwen/Qwen3.5-27B-FP8", "nodes": 1, "autoscaling": {"maxReplicas": 2}}
EMBEDDER = {"id": "Qwen/Qwen3-Embedding-8B", "nodes": 1, "serving": {"maxModelLen": 8192}, "autoscaling": {"maxReplicas": 1}}


def rag_with_batches(**changes: Any) -> Any:
    return render_with("rag", batch={"enabled": True}, **changes)


def runner_env(render: Any) -> dict[str, Any]:
    (container,) = render.one("kubernetes:apps/v1:Deployment", "batch-runner").inputs["spec"]["template"]["spec"]["containers"]
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


def test_the_runner_of_the_rag_stack_sends_each_models_lines_to_its_service_and_meters_its_replicas() -> None:
    # The embedding model takes fewer requests per replica: the runner bounds each model by its own figure.
    render = rag_with_batches(models=[GENERATOR, {**EMBEDDER, "autoscaling": {"maxReplicas": 1, "requestsPerReplica": 500}}])
    env = runner_env(render)
    table = {model["name"]: model for model in json.loads(env["SERVED_MODELS"])}
    assert set(table) == {"Qwen/Qwen3.5-27B-FP8", "Qwen/Qwen3-Embedding-8B"}
    generator, embedder = table["Qwen/Qwen3.5-27B-FP8"], table["Qwen/Qwen3-Embedding-8B"]
    assert (generator["task"], generator["deployment"]) == ("generate", "qwen3-5-27b-fp8")
    assert (embedder["task"], embedder["deployment"]) == ("embed", "qwen3-embedding-8b")
    assert embedder["url"] == "http://qwen3-embedding-8b.llm-serving.svc.cluster.local:8000/v1"
    assert (generator["requestsPerReplica"], embedder["requestsPerReplica"]) == (2000, 500)
    assert all(model["expectedColdStart"]["phases"] for model in table.values())
    # The one model's variables would send every line to one model: the table replaces them.
    assert not {"SERVING_URL", "SERVED_MODEL", "MODEL_TASK", "REPLICAS_DEPLOYMENT", "CONCURRENCY_PER_REPLICA"} & set(env)
    role = render.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "batch-runner").inputs
    assert role["rules"][0]["resourceNames"] == ["qwen3-5-27b-fp8", "qwen3-embedding-8b"]


def test_a_batch_file_wakes_every_model_whose_batch_is_on() -> None:
    def woken_by_input(render: Any) -> set[str]:
        return {
            scaled.inputs["spec"]["scaleTargetRef"]["name"]
            for scaled in render.by_type(SCALED_OBJECT)
            if any(trigger["name"] == "batch-input" for trigger in scaled.inputs["spec"]["triggers"])
        }

    assert woken_by_input(rag_with_batches()) == {"qwen3-5-27b-fp8", "qwen3-embedding-8b", "batch-runner"}
    generator_only = rag_with_batches(
        models=[
            {"id": "Qwen/Qwen3.5-27B-FP8", "nodes": 1, "autoscaling": {"maxReplicas": 2}},
            {
                "id": "Qwen/Qwen3-Embedding-8B",
                "nodes": 1,
                "serving": {"maxModelLen": 8192},
                "autoscaling": {"maxReplicas": 1},
                "batch": False,
            },
        ]
    )
    assert woken_by_input(generator_only) == {"qwen3-5-27b-fp8", "batch-runner"}
    assert [model["name"] for model in json.loads(runner_env(generator_only)["SERVED_MODELS"])] == ["Qwen/Qwen3.5-27B-FP8"]


def test_each_models_backlog_trigger_reads_the_lines_naming_that_model() -> None:
    render = rag_with_batches()
    queries = {
        scaled.inputs["spec"]["scaleTargetRef"]["name"]: trigger["metadata"]["query"]
        for scaled in render.by_type(SCALED_OBJECT)
        for trigger in scaled.inputs["spec"]["triggers"]
        if trigger["name"] == "batch-backlog"
    }
    assert queries == {
        "qwen3-5-27b-fp8": 'sum(batch_backlog_requests{namespace="llm-serving",model_name="Qwen/Qwen3.5-27B-FP8"})',
        "qwen3-embedding-8b": 'sum(batch_backlog_requests{namespace="llm-serving",model_name="Qwen/Qwen3-Embedding-8B"})',
    }
