"""What the preflight reads from a render, on hand-made Deployments and render folders: each field, each default, each refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight.rendered import (
    EngineSpec,
    Mount,
    RenderReadError,
    engine_container,
    engine_spec,
    flag_names,
    flag_value,
    queries,
    read_engine,
    read_prepared,
    vllm_reads,
)


def deployment(*containers: dict[str, Any], name: str = "vllm", **pod: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"template": {"spec": {"containers": list(containers), **pod}}}}


def engine(**fields: Any) -> dict[str, Any]:
    return {"name": "vllm", "command": ["vllm", "serve", "/models/m"], **fields}


def spec_of(*args: str, **fields: Any) -> EngineSpec:
    return engine_spec(deployment(engine(args=list(args), **fields)))


# The flags


@pytest.mark.parametrize(
    ("flags", "value"),
    [
        (["--port", "--other"], ""),
        (["--port"], ""),
        (["--port=a=b"], "a=b"),
        (["--port", "1", "--port"], ""),
        (["--port", "1", "x", "--port=2", "--port", "3"], "3"),
        (["--portx", "1"], None),
        ([], None),
    ],
)
def test_a_flag_given_without_a_value_reads_empty_and_the_last_one_wins(flags: list[str], value: str | None) -> None:
    assert flag_value(flags, "--port") == value


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (["--a=1=2", "--b", "v"], ["--a", "--b"]),
        (["-O", "-O0", "-O33"], ["-O", "-O", "-O33"]),
        (["-tp", "-1", "-", "value", "-2.5", "-q"], ["-tp", "-q"]),
    ],
)
def test_the_option_names_leave_out_values_and_negative_numbers(flags: list[str], names: list[str]) -> None:
    assert flag_names(flags) == names


def test_the_served_name_is_the_flags_or_the_model_path() -> None:
    assert spec_of("--served-model-name", "org/m").served_name == "org/m"
    assert spec_of("--port=1").served_name == "/models/m"


def test_the_shutdown_timeout_is_a_number_of_seconds_when_given() -> None:
    assert spec_of("--shutdown-timeout=20.5").shutdown_timeout == 20.5
    assert spec_of("--shutdown-timeout", "7").shutdown_timeout == 7.0
    assert spec_of().shutdown_timeout is None


# Which container runs vllm serve


@pytest.mark.parametrize(
    ("command", "args", "launcher"),
    [
        (["vllm", "serve"], ["m"], ("vllm", "serve")),
        (["/usr/local/bin/vllm"], ["serve", "m", "--x"], ("/usr/local/bin/vllm", "serve")),
        (["python3", "-m", "vllm.entrypoints.cli.main", "serve", "m"], None, ("python3", "-m", "vllm.entrypoints.cli.main", "serve")),
        (None, ["vllm", "serve", "m"], ("vllm", "serve")),
    ],
)
def test_vllm_serve_is_found_in_the_command_and_arguments_together(
    command: list[str] | None, args: list[str] | None, launcher: tuple[str, ...]
) -> None:
    spec = engine_spec(deployment({"name": "e", "command": command, "args": args}))
    assert spec.launcher == launcher and spec.model_path == "m"


@pytest.mark.parametrize(
    "words",
    [
        ["vllm", "serve"],  # no model after serve
        ["echo", "serve", "vllm"],  # serve before any vllm
        ["myvllmx", "serve", "m"],
        ["python3", "-m", "notvllm.x", "serve", "m"],
        ["vllm", "bench", "serve", "m"][1:],
    ],
)
def test_a_container_that_does_not_run_vllm_serve_is_not_the_engine(words: list[str]) -> None:
    assert engine_container(deployment({"name": "c", "command": words})) is None


def test_the_first_container_that_serves_is_the_engine() -> None:
    sidecar = {"name": "proxy", "command": ["envoy"]}
    first, second = engine(name="first"), engine(name="second")
    found = engine_container(deployment(sidecar, first, second))
    assert found == first
    assert engine_container({"spec": {}}) is None and engine_container({}) is None


def test_a_deployment_without_the_engine_is_refused_by_name() -> None:
    with pytest.raises(RenderReadError) as refused:
        engine_spec(deployment({"name": "x", "command": ["python3"]}, name="runner"))
    assert str(refused.value) == "Deployment runner runs no `vllm serve` container"
    with pytest.raises(RenderReadError, match=r"^Deployment \? runs no"):
        engine_spec({"spec": {"template": {"spec": {"containers": []}}}})


# The container's fields


def test_the_model_is_the_word_after_serve_or_the_model_flag() -> None:
    spec = spec_of("--port", "1")
    assert (spec.model_path, spec.flags) == ("/models/m", ("--port", "1"))
    flagged = engine_spec(deployment({"name": "e", "command": ["vllm", "serve", "--model", "/w", "--x"]}))
    assert (flagged.model_path, flagged.flags) == ("/w", ("--model", "/w", "--x"))
    bare = engine_spec(deployment({"name": "e", "command": ["vllm", "serve", "--x"]}))
    assert (bare.model_path, bare.flags) == ("", ("--x",))


def test_the_identity_of_the_engine() -> None:
    spec = engine_spec(deployment(engine(name="engine", image="vllm/vllm-openai:v0.26.0", args=[1, 2.5]), name="serving"))
    assert (spec.deployment, spec.container, spec.image) == ("serving", "engine", "vllm/vllm-openai:v0.26.0")
    assert spec.flags == ("1", "2.5")
    unnamed = engine_spec(deployment({"command": ["vllm", "serve", "m"]}))
    assert (unnamed.container, unnamed.image) == ("", "")


def test_plain_variables_have_their_text_and_the_others_only_their_name() -> None:
    env = [
        {"name": "A", "value": 1},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "EMPTY", "value": ""},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    spec = spec_of(env=env)
    assert spec.env == {"A": "1", "EMPTY": ""}
    assert spec.env_from_refs == ("TOKEN", "POD")
    assert (spec_of().env, spec_of().env_from_refs) == ({}, ())


def test_each_mount_has_its_volumes_kind_and_access() -> None:
    volumes = [
        {"name": "model", "persistentVolumeClaim": {"claimName": "c"}},
        {"name": "cache", "csi": {"driver": "gcsfuse.csi.storage.gke.io"}},
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
    ]
    mounts = [
        {"name": "model", "mountPath": "/models", "readOnly": True},
        {"name": "cache", "mountPath": "/compile-cache", "readOnly": False},
        {"name": "shm", "mountPath": "/dev/shm"},
        {"name": "lost", "mountPath": "/lost"},
    ]
    spec = engine_spec(deployment(engine(volumeMounts=mounts), volumes=volumes))
    assert spec.mounts == (
        Mount("/models", "model", "persistentVolumeClaim", True),
        Mount("/compile-cache", "cache", "csi", False),
        Mount("/dev/shm", "shm", "emptyDir", False),
        Mount("/lost", "lost", "unknown", False),
    )
    assert spec.shm_bytes == 64 * 2**30
    assert spec_of().mounts == ()


@pytest.mark.parametrize(
    ("size", "found"),
    [("64Gi", 64 * 2**30), ("2Ki", 2048), ("3Mi", 3 * 2**20), ("1Ti", 2**40), ("1000", 1000), ("1G", None), ("", None), ("x5Gi", None)],
)
def test_shared_memory_is_read_in_bytes_where_it_has_a_binary_size(size: str, found: int | None) -> None:
    shm = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": size} if size else {"medium": "Memory"}}
    assert engine_spec(deployment(engine(), volumes=[shm])).shm_bytes == found


def test_only_a_memory_backed_volume_is_shared_memory() -> None:
    volumes = [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "claim", "persistentVolumeClaim": {}}]
    assert engine_spec(deployment(engine(), volumes=volumes)).shm_bytes is None


@pytest.mark.parametrize(
    ("args", "ports", "port"),
    [
        (["--port", "9000"], [{"containerPort": 8080}], 9000),
        ([], [{"name": "metrics"}, {"containerPort": 8080}, {"containerPort": 8081}], 8080),
        ([], [], 8000),
        ([], None, 8000),
    ],
)
def test_the_port_is_the_flags_else_the_containers_first_else_vllms_default(args: list[str], ports: Any, port: int) -> None:
    assert spec_of(*args, ports=ports).port == port


def test_gpus_grace_prestop_and_probes_are_read_with_kubernetes_defaults() -> None:
    probe = {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10}
    spec = engine_spec(
        deployment(
            engine(
                resources={"limits": {"nvidia.com/gpu": "8", "cpu": "200"}},
                lifecycle={"preStop": {"sleep": {"seconds": 5}}},
                startupProbe=probe,
                readinessProbe={"httpGet": {"path": "/ready"}},
                livenessProbe={"tcpSocket": {"port": 8000}},
            ),
            terminationGracePeriodSeconds=25,
        )
    )
    assert (spec.gpus, spec.grace_seconds, spec.prestop_sleep_seconds) == (8, 25, 5.0)
    assert spec.probes == {
        "startupProbe": probe,
        "readinessProbe": {"httpGet": {"path": "/ready"}},
        "livenessProbe": {"tcpSocket": {"port": 8000}},
    }
    bare = spec_of(resources={"requests": {"cpu": "1"}}, lifecycle={"preStop": {"exec": {"command": ["true"]}}})
    assert (bare.gpus, bare.grace_seconds, bare.prestop_sleep_seconds, bare.probes, bare.shm_bytes) == (0, 30, 0.0, {}, None)
    assert (spec_of(resources=None, lifecycle=None).gpus, spec_of(lifecycle={"preStop": None}).prestop_sleep_seconds) == (0, 0.0)


# A render folder


def write_yaml(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document), encoding="utf-8")


def test_the_one_deployment_that_serves_is_read(tmp_path: Path) -> None:
    write_yaml(tmp_path / "kubernetes" / "ns.deployment.runner.yaml", deployment({"name": "r", "command": ["python3"]}, name="runner"))
    write_yaml(tmp_path / "kubernetes" / "ns.deployment.vllm.yaml", deployment(engine(), name="vllm"))
    write_yaml(tmp_path / "kubernetes" / "ns.deployment.list.yaml", [deployment(engine())])
    write_yaml(tmp_path / "kubernetes" / "ns.service.vllm.yaml", deployment(engine(), name="service"))
    assert read_engine(tmp_path).deployment == "vllm"


def test_two_deployments_that_serve_are_refused_with_their_count(tmp_path: Path) -> None:
    write_yaml(tmp_path / "kubernetes" / "a.deployment.one.yaml", deployment(engine(), name="one"))
    write_yaml(tmp_path / "kubernetes" / "a.deployment.two.yaml", deployment(engine(), name="two"))
    with pytest.raises(RenderReadError) as refused:
        read_engine(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path}: expected one Deployment running `vllm serve`, found 2; render the stack first: python -m render <stack>"
    )


def alert(path: Path, *queries: str | None) -> None:
    conditions: list[dict[str, Any]] = [{"conditionThreshold": {"filter": "x"}}]
    conditions += [{"conditionPrometheusQueryLanguage": {"query": q} if q is not None else {}} for q in queries]
    write_yaml(path, {"conditions": conditions})


def test_every_query_is_found_with_where_the_stack_reads_it(tmp_path: Path) -> None:
    alert(tmp_path / "cloud" / "AlertPolicy.queue-depth.yaml", "max(vllm:num_requests_waiting) > 5", None, "")
    alert(tmp_path / "cloud" / "AlertPolicy.b.yaml", "up == 0")
    write_yaml(tmp_path / "cloud" / "AlertPolicy.empty.yaml", {"displayName": "no conditions"})
    write_yaml(tmp_path / "cloud" / "Other.x.yaml", {"conditions": [{"conditionPrometheusQueryLanguage": {"query": "no"}}]})
    triggers = [
        {"type": "cpu", "name": "cpu", "metadata": {"query": "not promql"}},
        {"type": "prometheus", "name": "concurrency", "metadata": {"query": "sum(vllm:num_requests_running)"}},
    ]
    write_yaml(tmp_path / "kubernetes" / "ns.scaledobject.vllm.yaml", {"metadata": {"name": "vllm"}, "spec": {"triggers": triggers}})
    write_yaml(tmp_path / "kubernetes" / "ns.scaledobject.none.yaml", {"metadata": {"name": "none"}, "spec": {}})
    write_yaml(tmp_path / "kubernetes" / "ns.scaledobject.nospec.yaml", {"metadata": {"name": "nospec"}})
    tiles = [
        {"widget": {"title": "Tokens", "xyChart": {"dataSets": [{"timeSeriesQuery": {"prometheusQuery": "rate(vllm:a[5m])"}}, {}]}}},
        {"widget": {"title": "Text", "text": {"content": "x"}}},
        {},
        {"widget": {"title": "Other", "xyChart": {"dataSets": [{"timeSeriesQuery": {"timeSeriesFilter": {}}}]}}},
    ]
    board = tmp_path / "monitoring" / "dashboard.json"
    board.parent.mkdir()
    board.write_text(json.dumps({"mosaicLayout": {"tiles": tiles}}), encoding="utf-8")
    assert queries(tmp_path) == [
        ("alert b", "up == 0"),
        ("alert queue-depth", "max(vllm:num_requests_waiting) > 5"),
        ("scaler vllm trigger concurrency", "sum(vllm:num_requests_running)"),
        ("dashboard chart 'Tokens'", "rate(vllm:a[5m])"),
    ]


def test_a_render_without_queries_has_none(tmp_path: Path) -> None:
    assert queries(tmp_path) == []
    board = tmp_path / "monitoring" / "dashboard.json"
    board.parent.mkdir()
    board.write_text("{}", encoding="utf-8")
    assert queries(tmp_path) == []


def test_each_vllm_series_is_named_once_with_each_place_once_in_order() -> None:
    found = [
        ("alert x", "vllm:b_total + vllm:b_total + vllm:a:ratio{x='vllm:c'}"),
        ("scaler y", "rate(vllm:b_total[5m]) + novllm:d + up"),
        ("alert x", "vllm:b_total"),
        ("chart", "vllm:_9"),
    ]
    reads = vllm_reads(found)
    assert reads == {"vllm:_9": ["chart"], "vllm:a:ratio": ["alert x"], "vllm:b_total": ["alert x", "scaler y"], "vllm:c": ["alert x"]}
    assert list(reads) == sorted(reads)
    assert vllm_reads([("x", "vllm:9bad")]) == {}


def test_the_preparation_is_read_when_it_was_written(tmp_path: Path) -> None:
    assert read_prepared(tmp_path) == {}
    (tmp_path / "preflight.json").write_text('{"model": "org/m", "bench_client": ["vllm"]}', encoding="utf-8")
    assert read_prepared(tmp_path) == {"model": "org/m", "bench_client": ["vllm"]}
