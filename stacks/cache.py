"""The cache section: the Hyperdisk ML model cache."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from stacks.section import ConfigBool, Section, pinned_image


class CacheSettings(Section):
    """The Hyperdisk ML model cache, written once and mounted read-only."""

    enabled: ConfigBool = True
    """Pre-stage the weights on Hyperdisk ML. Off: every replica downloads them at start."""
    size_gi: int = Field(default=100, ge=40, le=65536)
    """Volume size in GiB (at least 40), at least the model's weights (the plan shows them)."""
    throughput_mibps: int = Field(default=2400, ge=400, le=1_200_000)
    """Provisioned throughput of the volume in MiB/s (Hyperdisk ML: 400 to 1,200,000)."""
    download_method: Literal["hf", "git-lfs"] = "git-lfs"
    """`hf` (huggingface_hub) or `git-lfs`. Xet downloads stalled at 16-20 GB for large checkpoints; git-lfs worked."""
    download_machine_family: Literal["c4a", "c3"] = "c4a"
    """CPU node of the download Job: C4A (Arm, as in the reference) or C3 (x86)."""
    download_image: str = "python:3.12.7-slim-bookworm"
    """Download Job image; must be multi-arch (it runs on Arm for C4A)."""
    download_retries: int = Field(default=3, ge=0, le=10)
    """Retries of the download Job before it fails."""
    download_deadline_minutes: int | None = Field(default=None, ge=5, le=24 * 60)
    """Deadline of the whole download Job; default: the model's weights at 8 MiB/s, and at least 60 minutes."""
    price_per_gib_month: float = Field(default=0.08, ge=0)
    """US dollars per GiB-month, for the estimates (an unofficial figure)."""
    price_per_mibps_month: float = Field(default=0.12, ge=0)
    """US dollars per provisioned MiB/s-month, for the estimates (an unofficial figure, as the GiB price)."""
    snapshot_price_per_gib_month: float = Field(default=0.05, ge=0)
    """US dollars per GiB-month of the cache's snapshot, for the estimates (standard snapshot storage list price)."""

    @field_validator("download_image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        return pinned_image(value)
