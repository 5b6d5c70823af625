from __future__ import annotations

from typing import Any

import pytest
import yaml

from facts.data_files import read_yaml
from render.validation import SCHEMAS, custom_resources


def test_the_vendored_crds_are_parsed_by_libyaml_not_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: yaml.SafeLoader, stream: Any) -> None:
        raise AssertionError("PyYAML's pure-Python parser read a vendored CRD")

    monkeypatch.setattr(yaml.SafeLoader, "__init__", refuse)
    custom_resources.cache_clear()
    read_yaml.cache_clear()
    try:
        assert ("cloud.google.com/v1", "ComputeClass") in custom_resources()
    finally:
        custom_resources.cache_clear()


def test_a_data_file_is_parsed_once_per_process() -> None:
    read_yaml.cache_clear()
    crd = SCHEMAS / "crds" / "cloud.google.com_computeclasses.yaml"
    first = read_yaml(crd)
    assert first["kind"] == "CustomResourceDefinition"
    assert read_yaml(crd) is first
    assert read_yaml.cache_info().misses == 1
