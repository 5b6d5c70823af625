"""The engine's Prometheus text read line by line, and each series the stack reads held to it, on hand-made text."""

from __future__ import annotations

import pytest

from preflight.metrics import MetricCheck, check, largest_bucket, samples, values

TEXT = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="org/m"} 3.0
vllm:num_requests_running{engine="1",model_name="org/m"} 1.0

vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="org/m"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="2560.0",model_name="org/m"} 7.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="org/m"} 9.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="org/m"} 9.0
process_start_time_seconds 1.7e9
vllm:quoted{path="a \\"b\\" c",model_name="org/m"} 1
"""


def test_each_sample_is_read_with_its_labels_and_comments_and_blank_lines_are_not() -> None:
    found = samples(TEXT)
    assert list(found) == [
        "vllm:num_requests_running",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_to_first_token_seconds_count",
        "process_start_time_seconds",
        "vllm:quoted",
    ]
    assert found["vllm:num_requests_running"] == [{"engine": "0", "model_name": "org/m"}, {"engine": "1", "model_name": "org/m"}]
    assert found["process_start_time_seconds"] == [{}]
    # An escaped quote stays inside the label's value.
    assert found["vllm:quoted"] == [{"path": 'a \\"b\\" c', "model_name": "org/m"}]


def test_a_sample_line_needs_a_name_and_a_value() -> None:
    assert samples('vllm:x\n{a="b"} 1\n9name 1\n') == {}
    assert samples('vllm:x{a="1"}  2\n') == {"vllm:x": [{"a": "1"}]}
    # A line that is not a sample is skipped, and the lines after it read.
    assert samples("vllm:x\n# TYPE vllm:y gauge\n\nvllm:y 1\n") == {"vllm:y": [{}]}


def test_the_values_of_one_series_with_their_labels() -> None:
    assert values(TEXT, "vllm:num_requests_running") == [
        ({"engine": "0", "model_name": "org/m"}, 3.0),
        ({"engine": "1", "model_name": "org/m"}, 1.0),
    ]
    assert values(TEXT, "process_start_time_seconds") == [({}, 1.7e9)]
    assert values(TEXT, "vllm:num_requests") == []


def test_the_largest_finite_bucket_bounds_a_histogram() -> None:
    assert largest_bucket(TEXT, "vllm:time_to_first_token_seconds") == 2560.0
    only_infinite = 'h_bucket{le="+Inf"} 1\nh_bucket{le="-Inf"} 0\nh_bucket{x="1"} 1\n'
    assert largest_bucket(only_infinite, "h") is None
    assert largest_bucket('h_bucket{le="-1"} 1\nh_bucket{le="-5"} 1\n', "h") == -1.0


def reads(*names: str) -> dict[str, list[str]]:
    return {name: [f"alert {name}", "dashboard"] for name in names}


def test_a_series_exported_with_engine_and_the_served_name_is_present_with_its_label_keys() -> None:
    result = check(reads("vllm:num_requests_running", "vllm:time_to_first_token_seconds_bucket"), TEXT, "org/m")
    assert result.present == {
        "vllm:num_requests_running": ["engine", "model_name"],
        "vllm:time_to_first_token_seconds_bucket": ["engine", "le", "model_name"],
    }
    assert (result.missing, result.unlabelled, result.ok) == ({}, {}, True)


def test_a_series_not_exported_is_missing_with_where_it_is_read() -> None:
    result = check(reads("vllm:gone", "vllm:num_requests_running"), TEXT, "org/m")
    assert result.missing == {"vllm:gone": ["alert vllm:gone", "dashboard"]}
    assert list(result.present) == ["vllm:num_requests_running"]
    assert not result.ok


@pytest.mark.parametrize(
    ("line", "served"),
    [
        ('vllm:x{model_name="org/m"} 1', "org/m"),  # no engine
        ('vllm:x{engine="0"} 1', "org/m"),  # no model_name
        ('vllm:x{engine="0",model_name="other"} 1', "org/m"),  # another served name
        ("vllm:x 1", "org/m"),
    ],
)
def test_a_series_without_engine_or_the_served_name_is_unlabelled(line: str, served: str) -> None:
    result = check(reads("vllm:x"), line + "\n", served)
    assert result.unlabelled == {"vllm:x": result.present["vllm:x"]}
    assert not result.ok and result.missing == {}


def test_one_label_set_with_the_served_name_is_enough() -> None:
    text = 'vllm:x{engine="0",model_name="other"} 1\nvllm:x{engine="1",model_name="org/m"} 1\n'
    assert check(reads("vllm:x"), text, "org/m").ok


def test_the_check_as_the_report_records_it() -> None:
    result = MetricCheck(present={"a": ["engine"]}, missing={"b": ["x"]}, unlabelled={"a": ["engine"]})
    assert result.as_dict() == {"ok": False, "present": {"a": ["engine"]}, "missing": {"b": ["x"]}, "unlabelled": {"a": ["engine"]}}
    assert MetricCheck().as_dict() == {"ok": True, "present": {}, "missing": {}, "unlabelled": {}}
    assert not MetricCheck(unlabelled={"a": []}).ok and not MetricCheck(missing={"a": []}).ok
