"""Kubernetes quantities as numbers, and the environment variable names Kubernetes takes.

Values are worked out from k8s.io/apimachinery's quantity grammar (decimal suffixes are powers of 1000,
binary ones of 1024; `m` is a thousandth), not read from the module.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from facts.kubernetes import ENV_NAME, quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Decimal(2)),
        ("1.5", Decimal("1.5")),
        ("500m", Decimal("0.5")),
        ("3k", Decimal(3000)),
        ("2M", Decimal(2_000_000)),
        ("4G", Decimal(4_000_000_000)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("2Ki", Decimal(2048)),
        ("3Mi", Decimal(3 * 1024**2)),
        ("1.5Gi", Decimal(1.5 * 1024**3)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
    ],
)
def test_a_quantity_is_its_number_times_its_suffix(text: str, value: Decimal) -> None:
    assert quantity(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Gi",
        "-1",
        "1e3",
        "1gi",
        "1 Gi",
        "1.Gi",
        ".5",
        "1Gib",
        "x1",
        # The grammar's digits are ASCII, and a value ends where its text does.
        "\u0661Gi",
        "1Gi\n",
    ],
)
def test_what_is_not_a_quantity_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        quantity(text)
    assert refused.value.args == (text,)


@pytest.mark.parametrize(
    ("name", "taken"), [("VLLM_LOGGING_LEVEL", True), ("a.b-c d", True), ("A=B", False), ("", False), ("\t", False), ("A\n", False)]
)
def test_an_environment_variable_name_is_printable_ascii_without_an_equals_sign(name: str, taken: bool) -> None:
    assert bool(ENV_NAME.fullmatch(name)) is taken
