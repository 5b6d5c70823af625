"""Several models in one stack (llm:models): each is checked as the one-model stack it would be, then with the others."""

from __future__ import annotations

from typing import Any

from facts.naming import model_short_name
from tests.stacks.handed import parsed, problem

GENERATOR = {"id": "Qwen/Qwen3.5-27B-FP8", "nodes": 1}
EMBEDDER = {"id": "Qwen/Qwen3-Embedding-8B", "nodes": 1}


def models(*entries: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(entry) for entry in entries]


def test_each_model_becomes_the_one_model_stack_of_its_own_settings_over_the_shared_ones() -> None:
    settings = parsed(
        models=models(GENERATOR, {**EMBEDDER, "nodes": 2, "serving": {"maxModelLen": 8192, "tensorParallelSize": 2}}),
        serving={"maxModelLen": 4096},
        zone="europe-west4-a",
    )
    generator, embedder = settings.each_model()
    assert (generator.model.id, generator.nodes, generator.serving.max_model_len) == ("Qwen/Qwen3.5-27B-FP8", 1, 4096)
    assert (embedder.model.id, embedder.nodes, embedder.serving.max_model_len) == ("Qwen/Qwen3-Embedding-8B", 2, 8192)
    # The shape one model sets is its own: its data parallelism fills the node from its tensor parallelism.
    assert (embedder.serving.tensor_parallel_size, embedder.serving.data_parallel_size) == (2, 4)
    assert (generator.serving.tensor_parallel_size, generator.serving.data_parallel_size) == (1, 8)
    # The shared settings are every model's.
    assert {one.zone for one in settings.each_model()} == {"europe-west4-a"}


def test_the_one_model_form_is_its_own_only_model() -> None:
    settings = parsed()
    assert settings.each_model() == (settings,)


def test_a_model_whose_shape_does_not_fill_the_node_is_refused_at_its_own_key() -> None:
    found = problem(models=models(GENERATOR, {**EMBEDDER, "serving": {"tensorParallelSize": 3}}))
    assert found.startswith("llm:models[1].serving.tensorParallelSize: 3 makes a pod of")


def test_a_flag_its_model_cannot_take_is_refused_at_the_models_own_key() -> None:
    llama = {"id": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "serving": {"tensorParallelSize": 2, "mtpTokens": 1}}
    assert problem(models=models(GENERATOR, llama)).startswith("llm:models[1].serving.mtpTokens: 1 ")


def test_a_shared_section_too_small_for_one_model_names_the_section_and_the_model() -> None:
    found = problem(models=models(GENERATOR, {"id": "meta-llama/Llama-3.3-70B-Instruct", "serving": {"tensorParallelSize": 2}}))
    assert found.startswith("llm:cache.sizeGi: 100 cannot hold meta-llama/Llama-3.3-70B-Instruct's weights")
    assert found.endswith("(for models[1], meta-llama/Llama-3.3-70B-Instruct)")


def test_a_shared_setting_one_model_cannot_take_names_the_shared_key_and_the_model() -> None:
    found = problem(models=models(GENERATOR, EMBEDDER), serving={"maxModelLen": 100})
    assert found.startswith("llm:serving.maxModelLen: 100 is below the workload's longest request")
    assert found.endswith("(for models[0], Qwen/Qwen3.5-27B-FP8)")


def test_model_and_models_together_are_refused() -> None:
    found = problem(models=models(GENERATOR), model={"id": "Qwen/Qwen3.5-27B-FP8"})
    assert found.startswith("llm:model: is set beside models")


def test_the_top_level_nodes_beside_models_is_refused() -> None:
    assert problem(models=models(GENERATOR), nodes=2).startswith("llm:nodes: is set beside models")


def test_an_empty_list_is_refused() -> None:
    assert problem(models=[]).startswith("llm:models: [] lists no model")


def test_two_models_served_by_one_name_are_refused() -> None:
    found = problem(models=models(GENERATOR, {**EMBEDDER, "servedName": "Qwen/Qwen3.5-27B-FP8"}))
    assert found.startswith("llm:models[1].servedName: 'Qwen/Qwen3.5-27B-FP8' is the name models[0] is served as")


def test_one_model_twice_is_refused_by_its_replica_set_name() -> None:
    found = problem(models=models(GENERATOR, {**GENERATOR, "revision": "v2", "servedName": "other"}))
    assert found.startswith("llm:models[1].id: 'Qwen/Qwen3.5-27B-FP8' gives the replica set name 'qwen3-5-27b-fp8'")


def test_a_created_reservation_must_hold_every_models_replicas_at_once() -> None:
    reservation = {
        "mode": "reservation",
        "reservation": {
            "name": "a4",
            "create": {"name": "a4", "startTime": "2027-01-04T00:00:00Z", "endTime": "2027-01-11T00:00:00Z", "nodes": 3},
        },
    }
    # Each alone fits 3 (two replicas, one more surges only when a lone replica must keep serving).
    found = problem(models=models({**GENERATOR, "nodes": 2}, {**EMBEDDER, "nodes": 2}), capacity=reservation)
    assert found.startswith("llm:capacity.reservation.create.nodes: 3 cannot hold every model's replicas at once")
    assert "reserve at least 4 nodes" in found


def test_an_unknown_key_of_a_model_gets_the_keys_a_model_takes() -> None:
    found = problem(models=models({**GENERATOR, "serving": {"maxModelLength": 4096}}))
    assert found.startswith("llm:models[0].serving.maxModelLength: unknown key; did you mean 'maxModelLen'?")


def test_gateway_routing_takes_several_models() -> None:
    settings = parsed(models=models(GENERATOR, {"id": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "nodes": 1}), routing="gateway")
    assert settings.routing == "gateway"


def test_gateway_routing_to_an_embedding_model_needs_the_endpoint_picker_that_parses_embeddings() -> None:
    found = problem(models=models(GENERATOR, EMBEDDER), routing="gateway")
    assert found.startswith("llm:gateway.chartVersion: 'v1.4.0' runs an endpoint picker that parses /v1/embeddings")
    assert "(for models[1], Qwen/Qwen3-Embedding-8B)" in found
    settings = parsed(models=models(GENERATOR, EMBEDDER), routing="gateway", gateway={"chartVersion": "v1.5.0"})
    assert settings.gateway.chart_version == "v1.5.0"


def test_short_names_are_kubernetes_names_from_the_model_id() -> None:
    assert model_short_name("Qwen/Qwen3-Embedding-8B") == "qwen3-embedding-8b"
    assert model_short_name("Qwen/Qwen3.5-27B-FP8") == "qwen3-5-27b-fp8"
    # A Service name starts with a letter.
    assert model_short_name("org/7b_Model") == "m-7b-model"


def test_a_stated_reservation_must_hold_every_models_autoscaling_maxima() -> None:
    capacity = {"mode": "reservation", "reservation": {"name": "a4", "nodes": 4}}
    scaled = [{**GENERATOR, "autoscaling": {"maxReplicas": 3}}, {**EMBEDDER, "autoscaling": {"maxReplicas": 2}}]
    found = problem(models=models(*scaled), capacity=capacity, autoscaling={"enabled": True, "minReplicas": 2})
    assert found.startswith("llm:capacity.reservation.nodes: 4 cannot hold every model's replicas at once (models[0] 3, models[1] 2")


def test_batches_with_several_models_need_a_model_whose_batch_is_on() -> None:
    assert parsed(models=models(GENERATOR, EMBEDDER), batch={"enabled": True}, autoscaling={"enabled": True}).batch.enabled
    off = [{**GENERATOR, "batch": False}, {**EMBEDDER, "batch": False}]
    found = problem(models=models(*off), batch={"enabled": True}, autoscaling={"enabled": True})
    assert found.startswith("llm:batch.enabled: true has no model to send to: every entry of models sets batch false")


def test_the_benchmark_with_several_models_is_refused_as_it_measures_one() -> None:
    llama = {"id": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "serving": {"tensorParallelSize": 2}}
    found = problem(models=models(GENERATOR, llama), benchmark={"enabled": True})
    assert found.startswith("llm:benchmark.enabled: true is not yet done for several models")
