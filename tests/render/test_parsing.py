"""What the render parses in bulk, it parses with libyaml: PyYAML's pure-Python parser took seconds per chart."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from render.chart import CHART_TYPE, render_chart
from tests.conftest import rendered


def test_a_charts_rendered_objects_are_parsed_by_libyaml_not_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    chart = rendered("gateway").by_type(CHART_TYPE)[0]

    def refuse(self: yaml.SafeLoader, stream: Any) -> None:
        raise AssertionError("PyYAML's pure-Python parser read a chart's output")

    monkeypatch.setattr(yaml.SafeLoader, "__init__", refuse)
    assert {item.manifest["kind"] for item in render_chart(chart)} >= {"Deployment", "InferencePool"}
