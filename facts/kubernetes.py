"""Kubernetes' own grammar: resource quantities and environment variable names."""

from __future__ import annotations

import re
from decimal import Decimal

# A quantity's number (ASCII digits) and suffix (k8s.io/apimachinery/pkg/api/resource); exponent forms are not taken.
_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")
_QUANTITY_FACTORS = {
    None: Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
# Kubernetes 1.30+ (RelaxedEnvironmentVariableValidation) takes any printable ASCII but '='.
ENV_NAME = re.compile(r"[\x20-\x3c\x3e-\x7e]+")


def quantity(value: str) -> Decimal:
    """A Kubernetes quantity as a number (cores, bytes); raises ``ValueError`` on anything else."""
    # The whole text: `$` would also end a match before a trailing newline.
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(value)
    return Decimal(match.group(1)) * _QUANTITY_FACTORS[match.group(2)]
