"""The checks several sections share (stacks/section.py), on hand-made values: each at and just past its bound.

Sources (docs/config-rules.md): GCP project ids are 6 to 30 of [a-z0-9-] from a letter, without google, null,
undefined or ssl; GCP refuses 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, 224.0.0.0/4 and 255.255.255.255/32 for
subnets; the Terraform provider parses times with Go's time.RFC3339; Pulumi's get_bool takes true and false.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from stacks.problems import ConfigProblem
from stacks.section import (
    check_name,
    check_order,
    days_between,
    instant,
    kubernetes_quantity,
    memory_quantity,
    pinned_image,
    private_cidr,
    project_id,
    utc_time,
)
from tests.stacks.handed import parsed, problem


def refusal(check: Any, *args: Any) -> tuple[tuple[str | int, ...], Any, str]:
    with pytest.raises(ConfigProblem) as error:
        check(*args)
    return error.value.path, error.value.value, error.value.reason


@pytest.mark.parametrize(
    ("given", "read"), [(True, True), (False, False), ("true", True), ("True", True), ("false", False), ("False", False)]
)
def test_a_boolean_is_what_pulumis_get_bool_takes(given: Any, read: bool) -> None:
    assert parsed(allowPublicExposure=given).allow_public_exposure is read


@pytest.mark.parametrize("given", ["yes", "on", "1", "0", "TRUE", ""])
def test_anything_else_is_not_a_boolean(given: str) -> None:
    assert problem(allowPublicNodes=given) == f"llm:allowPublicNodes: {given!r} is not a boolean; use true or false"


@pytest.mark.parametrize("cidr", ["10.0.0.0/20", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "100.127.255.0/24", "240.0.0.0/8"])
def test_private_and_shared_ranges_are_taken(cidr: str) -> None:
    assert private_cidr(cidr) == cidr


@pytest.mark.parametrize("cidr", ["10.0.0.0/33", "10.0.0.1/20", "10.0.0.0", "ten", "::1/128"])
def test_a_range_that_is_not_an_ipv4_cidr_is_refused(cidr: str) -> None:
    if cidr == "10.0.0.0":
        # One address reads as a /32: a CIDR range of one address.
        assert private_cidr(cidr) == cidr
        return
    assert refusal(private_cidr, cidr) == ((), cidr, "is not an IPv4 CIDR range such as 10.0.0.0/20")


@pytest.mark.parametrize(
    ("cidr", "prohibited"),
    [
        ("0.0.0.0/8", "0.0.0.0/8"),
        ("127.0.0.0/16", "127.0.0.0/8"),
        ("169.254.1.0/24", "169.254.0.0/16"),
        ("224.0.0.0/4", "224.0.0.0/4"),
        # Overlapping, not inside: 192.0.0.0/2 holds 224.0.0.0/4.
        ("192.0.0.0/2", "224.0.0.0/4"),
        ("255.255.255.255/32", "255.255.255.255/32"),
    ],
)
def test_a_range_gcp_refuses_for_subnets_is_refused(cidr: str, prohibited: str) -> None:
    assert refusal(private_cidr, cidr) == (
        (),
        cidr,
        f"overlaps {prohibited}, which GCP refuses for subnets; use a range within {TO_USE} or another range GCP allows",
    )


TO_USE = "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 (RFC 1918), 100.64.0.0/10 or 240.0.0.0/5"


@pytest.mark.parametrize("cidr", ["255.255.255.255/32", "8.8.0.0/20"])
def test_every_range_a_refusal_suggests_is_taken(cidr: str) -> None:
    # 240.0.0.0/4 itself holds 255.255.255.255, which GCP refuses: a suggestion must be a range the check takes.
    suggested = re.findall(r"\d+\.\d+\.\d+\.\d+/\d+", refusal(private_cidr, cidr)[2].partition("use")[2])
    assert len(suggested) == 5
    for range_ in suggested:
        assert private_cidr(range_) == range_


@pytest.mark.parametrize("cidr", ["8.8.0.0/20", "100.128.0.0/24", "100.0.0.0/9", "11.0.0.0/8"])
def test_a_public_range_is_refused(cidr: str) -> None:
    assert refusal(private_cidr, cidr) == (
        (),
        cidr,
        f"is a public range; use a range within {TO_USE}",
    )


@pytest.mark.parametrize("project", ["abcdef", "a" * 30, "a-1-b2", "my-project-123"])
def test_a_project_id_of_6_to_30_characters_is_taken(project: str) -> None:
    assert project_id(project) == project


@pytest.mark.parametrize("project", ["abcde", "a" * 31, "1abcdef", "abcdef-", "Abcdef", "abc_def", "abc.def"])
def test_a_project_id_out_of_gcps_form_is_refused(project: str) -> None:
    assert refusal(project_id, project) == (
        (),
        project,
        "is not a GCP project id: 6 to 30 lowercase letters, digits or '-', starting with a letter",
    )


@pytest.mark.parametrize(
    ("project", "word"), [("my-google-x", "google"), ("null-project", "null"), ("undefined-1", "undefined"), ("ssl-serving", "ssl")]
)
def test_a_project_id_holding_a_restricted_word_is_refused(project: str, word: str) -> None:
    assert refusal(project_id, project) == (
        (),
        project,
        f"holds {word!r}, which a GCP project id may not (google, null, undefined, ssl)",
    )


def test_a_project_id_the_stacks_buckets_cannot_begin_with_is_refused() -> None:
    assert refusal(project_id, "goog-serving") == (
        (),
        "goog-serving",
        'begins with "goog": the stack\'s bucket names begin with the project id, and Cloud Storage refuses them',
    )
    assert refusal(project_id, "g00gle-serving")[2].startswith('holds "google" or a close misspelling of it')


@pytest.mark.parametrize(
    "image", ["vllm/vllm-openai:v0.18.1", "python:3.12", "repo/x@sha256:" + "0" * 64, "repo/x:latest@sha256:" + "0" * 64]
)
def test_an_image_pinned_by_tag_or_digest_is_taken(image: str) -> None:
    assert pinned_image(image) == image


@pytest.mark.parametrize("image", ["vllm/vllm-openai", "vllm/vllm-openai:latest", "Not An Image", "repo/x@sha256:short"])
def test_an_image_not_pinned_is_refused(image: str) -> None:
    assert refusal(pinned_image, image) == (
        (),
        image,
        "is not pinned; name a tag such as vllm/vllm-openai:v0.18.1, a sha256 digest, or both",
    )


@pytest.mark.parametrize("value", ["10", "500m", "16Gi", "1900G", "1.5"])
def test_a_kubernetes_quantity_is_taken(value: str) -> None:
    assert kubernetes_quantity(value) == value


@pytest.mark.parametrize("value", ["lots", "16GB", "", "1 Gi"])
def test_what_is_not_a_kubernetes_quantity_is_refused(value: str) -> None:
    assert refusal(kubernetes_quantity, value) == ((), value, "is not a Kubernetes quantity such as 10, 500m, 16Gi or 1900G")
    assert refusal(memory_quantity, value)[2] == "is not a Kubernetes quantity such as 10, 500m, 16Gi or 1900G"


@pytest.mark.parametrize("value", ["512Mi", "1Gi", "1000", "1.5G", "500M"])
def test_memory_in_bytes_is_taken(value: str) -> None:
    assert memory_quantity(value) == value


@pytest.mark.parametrize("value", ["512m", "1.5m", "1000000m"])
def test_memory_in_thousandths_of_a_byte_is_refused(value: str) -> None:
    assert refusal(memory_quantity, value) == (
        (),
        value,
        "is in thousandths of a byte (Kubernetes' m suffix: 512m is half a byte); use Mi or Gi, e.g. 512Mi",
    )


@pytest.mark.parametrize(("name", "most"), [("a", 1), ("a" * 40, 40), ("a-1", 3), ("ab", 63)])
def test_a_name_up_to_its_length_is_taken(name: str, most: int) -> None:
    assert check_name(name, most) == name


@pytest.mark.parametrize(("name", "most"), [("a" * 41, 40), ("ab", 1), ("1a", 63), ("a-", 63), ("A", 63), ("", 63), ("a_b", 63)])
def test_a_name_too_long_or_out_of_form_is_refused(name: str, most: int) -> None:
    assert refusal(check_name, name, most) == (
        (),
        name,
        f"is not a valid name: lowercase letters, digits and '-', starting with a letter, at most {most} characters",
    )


@pytest.mark.parametrize("time", ["2026-12-01T00:00:00Z", "2028-02-29T23:59:59Z", "2026-04-30T12:00:00Z"])
def test_an_rfc_3339_utc_time_is_taken(time: str) -> None:
    assert utc_time(time) == time


@pytest.mark.parametrize(
    "time",
    ["2026-01-03T24:00:00Z", "2026-04-31T00:00:00Z", "2027-02-29T00:00:00Z", "2026-12-01T00:00:00+01:00", "2026-12-01 00:00:00Z", "soon"],
)
def test_a_time_the_provider_cannot_parse_is_refused(time: str) -> None:
    assert refusal(utc_time, time) == (
        (),
        time,
        "is not an RFC 3339 UTC time such as 2026-12-01T00:00:00Z (a real date, hours 00-23)",
    )


def test_an_instant_is_utc() -> None:
    assert instant("2026-12-01T06:30:00Z") == datetime(2026, 12, 1, 6, 30, tzinfo=UTC)


def test_an_end_must_come_after_its_start() -> None:
    check_order("2026-12-01T00:00:00Z", "2026-12-01T00:00:01Z")
    assert refusal(check_order, "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z") == (
        ("endTime",),
        "2026-12-01T00:00:00Z",
        "must be after startTime (2026-12-01T00:00:00Z)",
    )
    assert refusal(check_order, "2026-12-02T00:00:00Z", "2026-12-01T00:00:00Z")[0] == ("endTime",)


@pytest.mark.parametrize(
    ("start", "end", "days"),
    [
        ("2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", 1),
        ("2026-12-01T00:00:00Z", "2026-12-02T12:00:00Z", 1.5),
        ("2026-12-01T00:00:00Z", "2027-03-01T00:00:00Z", 90),
    ],
)
def test_days_between_counts_hours_as_fractions(start: str, end: str, days: float) -> None:
    assert days_between(start, end) == days
