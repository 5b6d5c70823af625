"""The benchmark section: the in-cluster benchmark Job."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from facts.gcp import machine_shapes
from stacks.problems import ConfigProblem
from stacks.section import ConfigBool, Section, pinned_image
from stacks.serving import image_release

# The benchmark clients take 14 CPUs of a dedicated node.
BENCHMARK_MIN_CPUS = 16
# The clients' pod asks for 48Gi (components/benchmark.py), beside what Autopilot keeps for the node.
BENCHMARK_MIN_GB = 56


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
        shape = machine_shapes().get(value)
        if shape is None:
            series = sorted({name.rsplit("-", 1)[0] for name in machine_shapes()})
            raise ConfigProblem((), value, f"is not a machine type whose size is known; use a predefined shape of {', '.join(series)}")
        if shape.cpus < BENCHMARK_MIN_CPUS:
            raise ConfigProblem((), value, f"is too small: the clients take 14 CPUs; use {BENCHMARK_MIN_CPUS}+ vCPUs")
        if shape.gb < BENCHMARK_MIN_GB:
            raise ConfigProblem(
                (), value, f"has {shape.gb:g} GB, too little for the clients' 48Gi pod; use {BENCHMARK_MIN_GB}+ GB, e.g. c4-standard-16"
            )
        return value
