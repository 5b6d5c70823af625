"""The engine's Prometheus text, held to what the stack's alerts, scaler and dashboard read."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# One sample line of the text format: name, optional {labels}, value (prometheus.io/docs/instrumenting/exposition_formats).
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[A-Za-z_][A-Za-z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')
# vLLM labels every engine metric with these (vllm/v1/metrics/loggers.py): the stack's queries may group by them.
EXPECTED_LABELS = ("engine", "model_name")


def samples(text: str) -> dict[str, list[dict[str, str]]]:
    """Sample name -> the label sets it was exported with."""
    found: dict[str, list[dict[str, str]]] = {}
    for line in text.splitlines():
        # A comment or a blank line does not match: a name cannot start with # or be empty.
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = {m["key"]: m["value"] for m in _LABEL.finditer(match["labels"] or "")}
        found.setdefault(match["name"], []).append(labels)
    return found


def values(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """(labels, value) of each sample called ``name``."""
    out = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match["name"] == name:
            labels = {m["key"]: m["value"] for m in _LABEL.finditer(match["labels"] or "")}
            out.append((labels, float(match["value"])))
    return out


def largest_bucket(text: str, histogram: str) -> float | None:
    """The largest finite ``le`` of ``histogram`` (a quantile above it reads as +Inf), or None when absent."""
    bounds = [float(labels["le"]) for labels, _ in values(text, histogram + "_bucket") if "le" in labels]
    finite = [b for b in bounds if not math.isinf(b)]
    return max(finite) if finite else None


@dataclass
class MetricCheck:
    # Series the stack reads -> the labels they were exported with (keys).
    present: dict[str, list[str]] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)
    # Present, but without engine/model_name, or with another served name.
    unlabelled: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unlabelled

    def as_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "present": self.present, "missing": self.missing, "unlabelled": self.unlabelled}


def check(reads: Mapping[str, list[str]], text: str, served_name: str) -> MetricCheck:
    """Each vLLM series the stack reads (``reads``: name -> where) held to the engine's ``/metrics`` text."""
    exported = samples(text)
    result = MetricCheck()
    for name, where in reads.items():
        label_sets = exported.get(name)
        if not label_sets:
            result.missing[name] = list(where)
            continue
        keys = sorted({key for labels in label_sets for key in labels})
        result.present[name] = keys
        if any(key not in keys for key in EXPECTED_LABELS) or not any(labels.get("model_name") == served_name for labels in label_sets):
            result.unlabelled[name] = keys
    return result
