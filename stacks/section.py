"""What every settings section shares: the model's base, and the checks of values several sections take."""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

from facts import images
from facts.gcp import NON_PUBLIC_RANGES, PROHIBITED_RANGES, PROJECT_RESTRICTED, bucket_name_problem
from facts.kubernetes import quantity
from stacks.problems import ConfigProblem

_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        coerce_numbers_to_str=True,
    )


def _config_bool(value: Any) -> Any:
    """Only what Pulumi's own ``get_bool`` takes: true/false (and True/False), not yes, on or 1."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "True", "false", "False"):
        return value.lower() == "true"
    raise ConfigProblem((), value, "is not a boolean; use true or false")


ConfigBool = Annotated[bool, BeforeValidator(_config_bool)]


# What the refusals below suggest: RFC 1918, shared address space and class E short of 255.255.255.255,
# which GCP refuses (all of 240.0.0.0/4 overlaps it).
RANGES_TO_USE = "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 (RFC 1918), 100.64.0.0/10 or 240.0.0.0/5"


def private_cidr(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value)
    except ValueError as exc:
        raise ConfigProblem((), value, "is not an IPv4 CIDR range such as 10.0.0.0/20") from exc
    for prohibited in PROHIBITED_RANGES:
        if network.overlaps(prohibited):
            raise ConfigProblem(
                (),
                value,
                f"overlaps {prohibited}, which GCP refuses for subnets; use a range within {RANGES_TO_USE} or another range GCP allows",
            )
    if not (network.is_private or any(network.subnet_of(shared) for shared in NON_PUBLIC_RANGES)):
        # Privately used public ranges need the cluster's default SNAT off, which this program does not set.
        raise ConfigProblem((), value, f"is a public range; use a range within {RANGES_TO_USE}")
    return value


def project_id(value: str) -> str:
    if not re.match(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", value):
        raise ConfigProblem((), value, "is not a GCP project id: 6 to 30 lowercase letters, digits or '-', starting with a letter")
    restricted = [word for word in PROJECT_RESTRICTED if word in value]
    if restricted:
        raise ConfigProblem((), value, f"holds {restricted[0]!r}, which a GCP project id may not ({', '.join(PROJECT_RESTRICTED)})")
    # Every bucket the stack derives begins with the project id.
    problem = bucket_name_problem(value)
    if problem:
        raise ConfigProblem((), value, f"{problem}: the stack's bucket names begin with the project id, and Cloud Storage refuses them")
    return value


def pinned_image(value: str) -> str:
    reference = images.parse(value)
    if reference is None or not reference.pinned:
        raise ConfigProblem((), value, "is not pinned; name a tag such as vllm/vllm-openai:v0.18.1, a sha256 digest, or both")
    return value


def kubernetes_quantity(value: str) -> str:
    try:
        quantity(value)
    except ValueError:
        raise ConfigProblem((), value, "is not a Kubernetes quantity such as 10, 500m, 16Gi or 1900G") from None
    return value


def memory_quantity(value: str) -> str:
    """A Kubernetes quantity of bytes; the milli suffix, which Kubernetes takes, is refused: 512m is half a byte."""
    kubernetes_quantity(value)
    if re.fullmatch(r"[0-9.]+m", value):
        raise ConfigProblem((), value, "is in thousandths of a byte (Kubernetes' m suffix: 512m is half a byte); use Mi or Gi, e.g. 512Mi")
    return value


def check_name(value: str, max_length: int) -> str:
    if len(value) > max_length or not _NAME.match(value):
        raise ConfigProblem(
            (), value, f"is not a valid name: lowercase letters, digits and '-', starting with a letter, at most {max_length} characters"
        )
    return value


def utc_time(value: str) -> str:
    try:
        if not _RFC3339.match(value):
            raise ValueError(value)
        # The provider parses with Go's time.Parse(time.RFC3339): no hour 24, no 31 April, no 29 February 2027.
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise ConfigProblem((), value, "is not an RFC 3339 UTC time such as 2026-12-01T00:00:00Z (a real date, hours 00-23)") from None
    return value


def instant(value: str) -> datetime:
    # Since Python 3.11 fromisoformat reads the Z suffix as UTC.
    return datetime.fromisoformat(value)


def check_order(start: str, end: str) -> None:
    if end <= start:
        raise ConfigProblem(("endTime",), end, f"must be after startTime ({start})")


def days_between(start: str, end: str) -> float:
    return (instant(end) - instant(start)).total_seconds() / 86400
