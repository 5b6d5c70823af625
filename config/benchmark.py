"""The benchmark section: the in-cluster benchmark Job."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from config.problems import ConfigProblem
from config.section import ConfigBool, Section, pinned_image
from config.serving import image_release
from facts.gcp import GB_PER_VCPU

# The benchmark clients take 14 CPUs of a dedicated node.
BENCHMARK_MIN_CPUS = 16
# The clients' pod asks for 48Gi (components/benchmark.py), beside what Autopilot keeps for the node.
BENCHMARK_MIN_GB = 56
_MACHINE_CPUS = re.compile(r"^([a-z0-9]+)-([a-z]+)-(\d+)$")


class BenchmarkSettings(Section):
    """An in-cluster benchmark Job following the reference method."""

    enabled: ConfigBool = False
    """Run the benchmark Job on `pulumi up` (not while scaled to zero)."""
    run: int = Field(default=1, ge=1)
    """Run number; raise it to run the benchmark again (a finished Job is not re-run)."""
    clients_per_node: int = Field(default=2, ge=1, le=16)
    """`vllm bench serve` clients per serving node (~2,000 concurrent requests per node in the reference)."""
    concurrency_per_client: int = Field(default=1024, ge=1, le=16000)
    """Concurrent requests of one client; one client saturates a core at ~16K."""
    prompts_per_client: int = Field(default=10240, ge=1)
    """Prompts each client sends."""
    machine_type: str = "c4-standard-16"
    """The dedicated CPU node the clients run on."""
    image: str = "vllm/vllm-openai:v0.18.1"
    """Image with `vllm bench serve`."""
    vllm_version: str | None = None
    """vLLM release the benchmark image runs when its tag names none; the clients' flags follow it."""

    @property
    def release(self) -> str:
        """The vLLM release of the benchmark image (validated: it has facts)."""
        return image_release(self.image, self.vllm_version)

    @model_validator(mode="after")
    def _release_facts(self) -> BenchmarkSettings:
        image_release(self.image, self.vllm_version)
        return self

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        return pinned_image(value)

    @field_validator("machine_type")
    @classmethod
    def _big_enough(cls, value: str) -> str:
        match = _MACHINE_CPUS.match(value)
        if not match or int(match.group(3)) < BENCHMARK_MIN_CPUS:
            raise ConfigProblem((), value, f"is too small or not a machine type: the clients take 14 CPUs; use {BENCHMARK_MIN_CPUS}+ vCPUs")
        per_cpu = GB_PER_VCPU.get((match.group(1), match.group(2)))
        if per_cpu is None:
            shapes = ", ".join(sorted({f"{family}-{kind}" for family, kind in GB_PER_VCPU}))
            raise ConfigProblem((), value, f"is not a machine shape whose memory is known; use one of {shapes} with 16+ vCPUs")
        if per_cpu * int(match.group(3)) < BENCHMARK_MIN_GB:
            memory = per_cpu * int(match.group(3))
            raise ConfigProblem(
                (), value, f"has {memory:g} GB, too little for the clients' 48Gi pod; use {BENCHMARK_MIN_GB}+ GB, e.g. c4-standard-16"
            )
        return value
