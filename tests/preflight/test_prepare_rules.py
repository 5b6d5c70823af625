"""The preparation: the stack's settings without credentials, the benchmark client of one node, and the render it runs first.

The render is ``python -m render`` run in the project's root; here the root is a folder of the test's own,
whose ``render`` package stands in for it and logs how it was run (a real render takes seconds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.benchmark import SEEDS_PER_RUN
from preflight.prepare import PROJECT_ROOT, prepare, prepared
from render.engine import stack_settings

DEV: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"))["config"]


def project(root: Path, name: str, stack: str, config: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text(yaml.safe_dump({"name": name, "runtime": "python"}), encoding="utf-8")
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    return root


def test_the_projects_keys_are_read_with_or_without_its_prefix_and_credentials_left_out(tmp_path: Path) -> None:
    config = {key.replace("llm:", "serving:"): value for key, value in DEV.items() if key != "llm:nodes"}
    config.update(
        {
            "nodes": 3,
            "serving:hfToken": {"secure": "v1:AAAA"},
            "apiKey": {"secure": "v1:BBBB"},
            "gcp:project": "someone-elses",
            "kubernetes:context": "x",
        }
    )
    settings = stack_settings("mine", project(tmp_path, "serving", "mine", config))
    assert settings.nodes == 3
    assert settings.project == DEV["llm:project"]


def test_the_projects_own_stack_is_read_by_default() -> None:
    assert stack_settings("dev").project == DEV["llm:project"]


def test_the_preparation_is_the_model_and_client_zeros_command_at_a_placeholder_address() -> None:
    settings = stack_settings("dev")
    found = prepared(settings, "dev")
    assert {k: v for k, v in found.items() if k != "bench_client"} == {"stack": "dev", "model": "Qwen/Qwen3.5-27B-FP8", "revision": "main"}
    client = found["bench_client"]
    assert client[:3] == ["vllm", "bench", "serve"]
    assert "--base-url=http://127.0.0.1:8000" in client
    assert "--model=Qwen/Qwen3.5-27B-FP8" in client and "--tokenizer=Qwen/Qwen3.5-27B-FP8" in client
    assert f"--seed={settings.benchmark.run * SEEDS_PER_RUN}" in client
    assert client[-1] == "--result-filename=client-0.json"


def test_an_embedding_model_is_not_prepared_for_a_preflight_that_sends_completions(tmp_path: Path) -> None:
    config = DEV | {"llm:model": {"id": "Qwen/Qwen3-Embedding-8B"}}
    settings = stack_settings("mine", project(tmp_path, "llm", "mine", config))
    with pytest.raises(SystemExit) as refusal:
        prepared(settings, "dev")
    assert "Qwen/Qwen3-Embedding-8B is an embedding model (llm:model.task embed)" in str(refusal.value)


def test_the_preparation_names_the_stack_it_was_made_for() -> None:
    assert prepared(stack_settings("dev"), "other")["stack"] == "other"


RENDER = """\
import pathlib, sys
stack = sys.argv[1]
folder = pathlib.Path("build") / stack
folder.mkdir(parents=True)
(folder / "ran.txt").write_text(" ".join(sys.argv[1:]))
sys.exit({code})
"""


def stand_in_render(root: Path, code: int) -> None:
    (root / "render").mkdir(parents=True)
    (root / "render" / "__init__.py").write_text("")
    (root / "render" / "__main__.py").write_text(RENDER.format(code=code))


def test_the_stack_is_rendered_in_the_root_then_the_preparation_written_beside_it(tmp_path: Path) -> None:
    root = project(tmp_path / "root", "llm", "mine", DEV)
    stand_in_render(root, 0)
    folder = prepare("mine", root)
    assert folder == root / "build" / "mine"
    assert (folder / "ran.txt").read_text() == "mine"
    text = (folder / "preflight.json").read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert json.loads(text) == prepared(stack_settings("mine", root), "mine")


def test_a_stack_that_does_not_render_is_refused_with_the_renders_exit_code(tmp_path: Path) -> None:
    root = project(tmp_path / "root", "llm", "mine", DEV)
    stand_in_render(root, 3)
    with pytest.raises(SystemExit) as refused:
        prepare("mine", root)
    assert str(refused.value) == "the render of mine failed (exit 3); the preflight runs only a stack that renders"
    assert not (root / "build" / "mine" / "preflight.json").exists()
