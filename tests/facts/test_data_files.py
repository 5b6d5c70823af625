"""The one YAML reader: a file parsed once per process and shared, text parsed afresh on every call."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from facts.data_files import parse_yaml, read_yaml


def test_a_file_is_parsed_once_and_every_reader_shares_the_document(tmp_path: Path) -> None:
    path = tmp_path / "zones.yaml"
    path.write_text("asOf: '2026-11-23'\nzones: [europe-west4-b, us-central1-b]\n")
    first = read_yaml(path)
    assert first == {"asOf": "2026-11-23", "zones": ["europe-west4-b", "us-central1-b"]}
    path.write_text("zones: []\n")
    assert read_yaml(path) is first


def test_text_is_parsed_into_a_new_document_each_time() -> None:
    text = "metrics:\n  - vllm:num_requests_waiting gauge\nnodes: 2\n"
    first, second = parse_yaml(text), parse_yaml(text)
    assert first == second == {"metrics": ["vllm:num_requests_waiting gauge"], "nodes": 2}
    assert first is not second


def test_only_safe_yaml_is_read(tmp_path: Path) -> None:
    # A safe loader refuses Python's tags rather than building objects from them.
    path = tmp_path / "unsafe.yaml"
    path.write_text("!!python/object/apply:os.getcwd []\n")
    with pytest.raises(yaml.constructor.ConstructorError, match="python/object/apply"):
        read_yaml(path)
    with pytest.raises(yaml.constructor.ConstructorError, match="python/object/apply"):
        parse_yaml(path.read_text())
