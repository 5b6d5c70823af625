"""Config errors written for the person who edits the stack file (stacks/problems.py), on hand-made settings and errors."""

from __future__ import annotations

from datetime import date
from enum import Enum
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator

from stacks.loading import parse_settings
from stacks.problems import ConfigProblem, FractionOf, StackConfigError, closest, describe, key_name, one_of, show_value
from stacks.settings import StackSettings, known_keys
from tests.stacks.handed import problems

WINDOW = {"startTime": "2026-01-03T00:00:00Z", "endTime": "2026-01-03T06:00:00Z"}


def test_a_problem_keeps_its_path_value_and_reason() -> None:
    found = ConfigProblem(["capacity", 1], "x", "is wrong")
    assert (found.path, found.value, found.reason, str(found)) == (("capacity", 1), "x", "is wrong", "is wrong")


def test_the_error_counts_its_problems_and_lists_one_a_line() -> None:
    one = StackConfigError(["llm:a: is wrong"])
    assert (one.problems, str(one)) == (["llm:a: is wrong"], "stack configuration has 1 problem:\n  - llm:a: is wrong")
    two = StackConfigError(("llm:a: x", "llm:b: y"))
    assert (two.problems, str(two)) == (["llm:a: x", "llm:b: y"], "stack configuration has 2 problems:\n  - llm:a: x\n  - llm:b: y")


@pytest.mark.parametrize(
    ("path", "key"),
    [
        (("capacity", "fallback", 1), "llm:capacity.fallback[1]"),
        (("nodes",), "llm:nodes"),
        (("autoscaling", "batchWindows", 0, "replicas"), "llm:autoscaling.batchWindows[0].replicas"),
        ((2, "name"), "llm:[2].name"),
        ((), "llm:"),
    ],
)
def test_a_key_is_named_as_the_stack_file_writes_it(path: tuple[str | int, ...], key: str) -> None:
    assert key_name("llm", path) == key


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x", "'x'"),
        ("", "''"),
        (2, "2"),
        (2.5, "2.5"),
        (True, "true"),
        (None, "null"),
        ({"b": 1, "a": [2]}, '{"a": [2], "b": 1}'),
        (date(2026, 1, 3), '"2026-01-03"'),
    ],
)
def test_a_value_is_shown_as_the_stack_file_writes_it(value: Any, shown: str) -> None:
    assert show_value(value) == shown


def test_choices_are_listed_in_order() -> None:
    assert one_of(["spot", "reservation"]) == "use one of: spot, reservation"
    assert one_of([]) == "use one of: "


def test_a_misspelt_key_gets_the_closest_known_one() -> None:
    assert closest("node", ["zone", "nodes", "region"]) == "did you mean 'nodes'? known keys: nodes, region, zone"
    assert closest("qqqq", ["zone", "nodes"]) == "known keys: nodes, zone"


def test_an_unknown_key_names_the_closest_of_its_own_section() -> None:
    (found,) = problems(node=2)
    assert found.startswith("llm:node: unknown key; did you mean 'nodes'? known keys: ")
    assert ", nodes, " in found


def test_an_unknown_key_in_a_list_item_names_the_keys_of_the_items_section() -> None:
    times = {"startTime": "2026-12-01T00:00:00Z", "endTime": "2026-12-02T00:00:00Z"}
    found = problems(cluster={"maintenance": {"window": WINDOW, "exclusions": [{"name": "a", **times}, {"nmae": "b", **times}]}})
    assert found == [
        "llm:cluster.maintenance.exclusions[1].name: is required",
        "llm:cluster.maintenance.exclusions[1].nmae: unknown key; did you mean 'name'? known keys: endTime, name, scope, startTime",
    ]


def test_an_unknown_key_of_a_section_names_the_sections_keys() -> None:
    assert problems(capacity={"flexstart": {}}) == [
        "llm:capacity.flexstart: unknown key; did you mean 'flexStart'? known keys: fallback, flexStart, mode, pricePerNodeHour, "
        "reservation"
    ]


def test_every_problem_is_listed_after_one_of_the_settings_own() -> None:
    assert problems(nodes=-1, routing="nodeport") == [
        "llm:nodes: -1 is out of range; use 0 (scaled to zero) up to 1000 A4 nodes",
        "llm:routing: 'nodeport' is not allowed; use one of: clusterip, gateway",
    ]


def test_a_missing_top_level_key_says_how_to_set_it() -> None:
    with pytest.raises(StackConfigError) as error:
        parse_settings({}, "llm")
    assert error.value.problems == ["llm:project: is required; set it with `pulumi config set project <value>`"]


def test_a_value_outside_a_closed_set_lists_the_set() -> None:
    assert problems(routing="nodeport") == ["llm:routing: 'nodeport' is not allowed; use one of: clusterip, gateway"]
    assert problems(serving={"kvCacheDtype": "fp16"}) == [
        "llm:serving.kvCacheDtype: 'fp16' is not allowed; use one of: auto, fp8, fp8_e4m3, fp8_e5m2"
    ]


def test_a_value_of_the_wrong_type_gets_pydantics_reason_as_a_sentence() -> None:
    assert problems(nodes="twelve") == [
        "llm:nodes: 'twelve' is not allowed: input should be a valid integer, unable to parse string as an integer"
    ]


def test_a_problem_without_a_value_shows_none() -> None:
    assert problems(capacity={"mode": "reservation"}) == [
        "llm:capacity.reservation: is required when capacity.mode is reservation; set reservation.name"
    ]


def test_a_false_value_is_shown() -> None:
    assert problems(cluster={"privateNodes": False}) == [
        "llm:cluster.privateNodes: false gives every node a public IP; set allowPublicNodes: true to opt in"
    ]


class _Colour(Enum):
    RED = "red"
    BLUE = "blue"


class _Painted(BaseModel):
    colour: _Colour


def test_a_value_outside_an_enumeration_lists_its_values() -> None:
    with pytest.raises(ValidationError) as error:
        _Painted.model_validate({"colour": "green"})
    assert describe(error.value, "ns", {}) == ["ns:colour: 'green' is not allowed; use one of: red, blue"]


class _Plain(BaseModel):
    size: int

    @field_validator("size")
    @classmethod
    def _size(cls, value: int) -> int:
        raise ValueError("Size is odd")


def test_a_plain_value_error_reads_as_a_sentence_without_pydantics_prefix() -> None:
    with pytest.raises(ValidationError) as error:
        _Plain.model_validate({"size": 3})
    assert describe(error.value, "ns", {}) == ["ns:size: 3 is not allowed: size is odd"]


def test_an_unknown_key_of_a_section_without_known_keys_gets_no_hint() -> None:
    with pytest.raises(ValidationError) as error:
        _Strict.model_validate({"a": {"b": 1}})
    assert describe(error.value, "ns", {}) == ["ns:a.b: unknown key; known keys: "]


class _Inner(BaseModel, extra="forbid"):
    pass


class _Strict(BaseModel):
    a: _Inner


# --- a section, a mapping or a list written in the wrong shape ------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"capacity": "spot"},
            "llm:capacity: 'spot' is a single value, but the section is a mapping of its keys: fallback, flexStart, mode, "
            "pricePerNodeHour, reservation",
        ),
        (
            {"model": "Qwen/Qwen3.5-27B-FP8"},
            "llm:model: 'Qwen/Qwen3.5-27B-FP8' is a single value, but the section is a mapping of its keys: ",
        ),
        ({"serving": ["a", "b"]}, 'llm:serving: ["a", "b"] is a list, but the section is a mapping of its keys: '),
        (
            {"cluster": {"maintenance": {"window": 3}}},
            "llm:cluster.maintenance.window: 3 is a single value, but the section is a mapping of its keys: ",
        ),
    ],
)
def test_a_section_written_as_a_value_or_a_list_names_its_shape_and_its_keys(values: dict[str, Any], expected: str) -> None:
    (found,) = problems(**values)
    assert found.startswith(expected), found
    assert "dictionary" not in found and "instance of" not in found


def test_a_section_given_as_a_value_lists_every_key_it_takes() -> None:
    (found,) = problems(model="Qwen/Qwen3.5-27B-FP8")
    assert found.endswith(": " + ", ".join(sorted(known_keys()[("model",)])))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"labels": "team"}, "llm:labels: 'team' is a single value, but the setting is a mapping of names to values"),
        ({"serving": {"env": ["A=1"]}}, 'llm:serving.env: ["A=1"] is a list, but the setting is a mapping of names to values'),
        ({"capacity": {"fallback": "spot"}}, "llm:capacity.fallback: 'spot' is a single value, but the setting is a list"),
        ({"capacity": {"fallback": {"spot": 1}}}, 'llm:capacity.fallback: {"spot": 1} is a mapping, but the setting is a list'),
    ],
)
def test_a_mapping_or_a_list_written_in_another_shape_says_which_shape_it_takes(values: dict[str, Any], expected: str) -> None:
    assert problems(**values) == [expected]


# --- fractions -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"serving": {"gpuMemoryUtilization": 92}},
            "llm:serving.gpuMemoryUtilization: 92 is a fraction of each GPU's memory (0 < x <= 0.95): use 0.92, not 92",
        ),
        (
            {"serving": {"gpuMemoryUtilization": 0.99}},
            "llm:serving.gpuMemoryUtilization: 0.99 is out of range: a fraction of each GPU's memory (0 < x <= 0.95)",
        ),
        (
            {"serving": {"gpuMemoryUtilization": 0}},
            "llm:serving.gpuMemoryUtilization: 0 is out of range: a fraction of each GPU's memory (0 < x <= 0.95)",
        ),
        (
            {"observability": {"kvCacheUsage": 90}},
            "llm:observability.kvCacheUsage: 90 is a fraction of an engine's KV cache (0 < x <= 1): use 0.9, not 90",
        ),
        (
            {"observability": {"throughputFraction": 50}},
            "llm:observability.throughputFraction: 50 is a fraction of the stack's estimated throughput (0 < x <= 1): use 0.5, not 50",
        ),
        (
            {"workload": {"rangeRatio": 25}},
            "llm:workload.rangeRatio: 25 is a fraction of the mean length (0 <= x < 1): use 0.25, not 25",
        ),
        (
            {"observability": {"kvCacheUsage": 1.01}},
            "llm:observability.kvCacheUsage: 1.01 is out of range: a fraction of an engine's KV cache (0 < x <= 1)",
        ),
        (
            {"serving": {"gpuMemoryUtilization": 1}},
            "llm:serving.gpuMemoryUtilization: 1 is out of range: a fraction of each GPU's memory (0 < x <= 0.95)",
        ),
        (
            {"serving": {"gpuMemoryUtilization": 2}},
            "llm:serving.gpuMemoryUtilization: 2 is a fraction of each GPU's memory (0 < x <= 0.95): use 0.02, not 2",
        ),
        (
            {"observability": {"kvCacheUsage": 101}},
            "llm:observability.kvCacheUsage: 101 is out of range: a fraction of an engine's KV cache (0 < x <= 1)",
        ),
        (
            {"serving": {"gpuMemoryUtilization": 96}},
            "llm:serving.gpuMemoryUtilization: 96 is out of range: a fraction of each GPU's memory (0 < x <= 0.95)",
        ),
    ],
)
def test_a_fraction_out_of_range_says_what_it_is_a_fraction_of_and_a_percentage_gets_its_fraction(
    values: dict[str, Any], expected: str
) -> None:
    assert problems(**values) == [expected]


def test_every_fraction_setting_says_what_it_is_a_fraction_of() -> None:
    # A float setting bounded by 1 is a fraction: each must name its whole, or a percentage gets pydantic's bare bound.
    def walk(model: type[BaseModel], path: str) -> list[str]:
        found = []
        for field in model.model_fields.values():
            key = f"{path}.{field.alias}" if path else str(field.alias)
            for candidate in getattr(field.annotation, "__args__", (field.annotation,)):
                if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                    found += walk(candidate, key)
            highs = [getattr(m, "le", None) or getattr(m, "lt", None) for m in field.metadata]
            if field.annotation is float and any(high is not None and high <= 1 for high in highs):
                found.append(key)
        return found

    keys = walk(StackSettings, "")
    assert len(keys) >= 4
    for key in keys:
        section, name = key.rsplit(".", 1)
        (found,) = problems(**{section: {name: 500}})
        assert found.startswith(f"llm:{key}: 500 is out of range: a fraction of "), found


class _Section(BaseModel):
    size: int = 1


class _Part(BaseModel):
    share: Annotated[float, FractionOf("a part")] = Field(default=0.5, gt=0, le=1)


class _Shares(BaseModel):
    share: Annotated[float, FractionOf("the whole")] = Field(default=0.5, gt=0, le=1)
    floor: Annotated[float, FractionOf("the floor")] = Field(default=0.5, le=1)
    ceiling: Annotated[float, FractionOf("the ceiling")] = Field(default=0.5, ge=0.1)
    count: int = Field(default=1, ge=1)
    sizes: dict[str, Annotated[int, Field(gt=0)]] = {}
    section: _Section = _Section()
    parts: tuple[_Part, ...] = ()


def described(model: type[BaseModel] | None = _Shares, **values: Any) -> list[str]:
    with pytest.raises(ValidationError) as error:
        _Shares.model_validate(values)
    return describe(error.value, "ns", {}, model)


def test_a_fraction_is_read_from_its_mark_and_a_side_it_leaves_open_reads_as_0_or_1() -> None:
    assert described(share=92) == ["ns:share: 92 is a fraction of the whole (0 < x <= 1): use 0.92, not 92"]
    assert described(floor=1.5) == ["ns:floor: 1.5 is out of range: a fraction of the floor (0 <= x <= 1)"]
    assert described(ceiling=0) == ["ns:ceiling: 0 is out of range: a fraction of the ceiling (0.1 <= x <= 1)"]


def test_a_fraction_in_a_list_of_sections_is_found_through_the_list() -> None:
    assert described(parts=[{"share": 0.5}, {"share": 50}]) == [
        "ns:parts[1].share: 50 is a fraction of a part (0 < x <= 1): use 0.5, not 50"
    ]


def test_without_the_root_model_or_the_mark_a_bound_gets_pydantics_reason() -> None:
    assert described(None, share=92) == ["ns:share: 92 is not allowed: input should be less than or equal to 1"]
    assert described(count=0) == ["ns:count: 0 is not allowed: input should be greater than or equal to 1"]
    assert described(sizes={"a": 0}) == ["ns:sizes.a: 0 is not allowed: input should be greater than 0"]


def test_a_fraction_that_is_not_a_number_gets_pydantics_reason() -> None:
    assert described(share="most") == [
        "ns:share: 'most' is not allowed: input should be a valid number, unable to parse string as a number"
    ]


def test_a_section_without_known_keys_names_none() -> None:
    assert described(section="x") == ["ns:section: 'x' is a single value, but the section is a mapping of its keys: "]
