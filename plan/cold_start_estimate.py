"""The expected cold start of a wake to N replicas, phase by phase, each figure with its source.

A wake from zero pays every phase on every node before the first token: the
A4 node, the image, the weights, then vLLM's compile and CUDA graph capture.
``python -m ops.cold_start`` measures the same phases after a real wake
(docs/cold-start.md); where the two disagree, the measurement wins and the
figure here is the one to correct.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from facts.vllm import (
    FIRST_ANSWER_COMPILE_CACHE_ONLY_SECONDS,
    FIRST_ANSWER_SECONDS,
    FULL_SIZE_COLD_START,
    START_ALL_CACHES_SECONDS,
    START_COLD_SECONDS,
    START_COMPILE_CACHE_ONLY_SECONDS,
)

# Reference write-up (docs/reference.md): 5-6 min for Autopilot to provision an A4 node.
NODE_PROVISIONING_SECONDS = 5.5 * 60
NODE_SOURCE = "reference: Autopilot provisioned an A4 node in 5-6 min"
# Flex-start nodes come when the Dynamic Workload Scheduler finds capacity: no figure bounds the wait.
FLEX_START_SOURCE = "no reference figure: flex-start waits in the Dynamic Workload Scheduler's queue for capacity"
# GoogleCloudPlatform/ai-on-gke best-practices/startup-latency.md: Triton (a 5.4 GB image) went from
# creation to serving in 30 s with image streaming, 191 s without.
IMAGE_STREAMED_SECONDS = 30.0
IMAGE_PULLED_SECONDS = 191.0
IMAGE_SOURCE = "ai-on-gke startup-latency guide: a 5.4 GB image, creation to serving in {} s {}"
MIB = 2**20
# The reference ran its cache at 2,400 MiB/s; a wake reads the same bytes on every node at once.
THROUGHPUT_PER_NODE_MIBPS = 2400
# vLLM's start besides the weights, cold: measured at full size (facts/vllm.py), not the miniature's times scaled.
FULL_SIZE = FULL_SIZE_COLD_START
COMPILE_COLD_SECONDS = FULL_SIZE.besides_weights
COMPILE_COLD_SOURCE = (
    f"{FULL_SIZE.gpu}, measured at full size ({FULL_SIZE.run}): Ready after {FULL_SIZE.ready:.0f} s less the "
    f"{FULL_SIZE.weights_load:.0f} s weight load; in it torch.compile {FULL_SIZE.torch_compile:.0f} s, the first profiling run "
    f"{FULL_SIZE.first_profiling:.0f} s, the Triton and DeepGEMM warm-up {FULL_SIZE.kernel_warmup:.0f} s over "
    f"{FULL_SIZE.warmup_shapes} shapes, CUDA graph capture {FULL_SIZE.graph_capture:.0f} s; no B200 run yet"
)
# The miniature keeps the real head sizes, so the kernels Triton compiles at the first answer are the real model's:
# their compile time is the miniature's own, unscaled.
RUN = "preflight of dev on one H100 (vLLM 0.26.0, 2026-11-26, tests/real_runs/2026-11-26-h100-dev)"
FIRST_ANSWER_COLD_SECONDS = float(FIRST_ANSWER_SECONDS)
FIRST_ANSWER_SOURCE = (
    f"{RUN}: the first completion {FIRST_ANSWER_SECONDS} s after /health while Triton compiled the kernels first met at "
    "inference (the miniature keeps the real head sizes, so the same kernels); the startup probe waits for it"
)
# No full-size start with warm caches was measured yet: the miniature's ratios to its cold start carry the full-size figure.
WARM_CAVEAT = f"times the {FULL_SIZE.gpu} full-size cold figure (no full-size start with warm caches measured yet)"
COMPILE_WARM_SECONDS = COMPILE_COLD_SECONDS * START_ALL_CACHES_SECONDS / START_COLD_SECONDS
COMPILE_WARM_SOURCE = f"{RUN}: {START_ALL_CACHES_SECONDS} s of {START_COLD_SECONDS} s to /health with every cache warm, {WARM_CAVEAT}"
COMPILE_CACHE_ONLY_SECONDS = (
    COMPILE_COLD_SECONDS * (START_COMPILE_CACHE_ONLY_SECONDS + FIRST_ANSWER_COMPILE_CACHE_ONLY_SECONDS) / START_COLD_SECONDS
)
COMPILE_CACHE_ONLY_SOURCE = (
    f"{RUN}: {START_COMPILE_CACHE_ONLY_SECONDS} s to /health and the first answer {FIRST_ANSWER_COMPILE_CACHE_ONLY_SECONDS} s later "
    f"with only VLLM_CACHE_ROOT kept, against {START_COLD_SECONDS} s, {WARM_CAVEAT}: what the JIT caches on the bucket save"
)


@dataclass(frozen=True)
class CacheDisk:
    """The model cache as the estimates see it: its size and throughput, and what each bills a month."""

    size_gi: int
    throughput_mibps: int
    price_per_gib_month: float
    price_per_mibps_month: float
    snapshot_price_per_gib_month: float
    # The model's weights as a node reads them at a wake (facts/models.py, the MTP drafter's when it drafts).
    weight_bytes: int


@dataclass(frozen=True)
class Figure:
    """Seconds one phase is expected to take, or None where no public figure exists; and where it comes from."""

    seconds: float | None
    source: str

    def as_output(self) -> dict[str, object]:
        return {"seconds": None if self.seconds is None else round(self.seconds), "source": self.source}


def compile_cache_enabled(env: Mapping[str, str]) -> bool:
    """Off when the engine's own switch is: vLLM 0.18.1 reads ``bool(int(VLLM_DISABLE_COMPILE_CACHE))`` (vllm/envs.py)."""
    value = env.get("VLLM_DISABLE_COMPILE_CACHE", "0").strip()
    return not (value.lstrip("-").isdigit() and int(value) != 0)


def image_streamed(image_ref: str, region: str) -> bool:
    """Whether GKE streams ``image_ref`` to nodes in ``region``.

    Image streaming serves images from Artifact Registry (GKE's image-streaming page); the
    stack's remote repositories sit in its region, and nothing else is counted as streamed.
    """
    return image_ref.startswith(f"{region}-docker.pkg.dev/")


def node_provisioning(first_step: str) -> Figure:
    """The wait for an A4 node of the preferred capacity step."""
    if first_step == "flex-start":
        return Figure(None, FLEX_START_SOURCE)
    return Figure(NODE_PROVISIONING_SECONDS, NODE_SOURCE)


def image(image_ref: str, region: str) -> Figure:
    """Streamed when GKE can stream the image as the nodes pull it, else pulled whole."""
    if image_streamed(image_ref, region):
        return Figure(IMAGE_STREAMED_SECONDS, IMAGE_SOURCE.format(f"{IMAGE_STREAMED_SECONDS:.0f}", "with image streaming"))
    return Figure(IMAGE_PULLED_SECONDS, IMAGE_SOURCE.format(f"{IMAGE_PULLED_SECONDS:.0f}", "pulled whole (not streamable here)"))


def weights(cache: CacheDisk | None, replicas: int) -> Figure:
    """The weights read by ``replicas`` nodes at once from one Hyperdisk ML volume.

    The volume's provisioned throughput is its total, shared by every node reading it
    (docs/cold-start.md); each node reads the full weights once (its eight engines share
    the node's page cache).
    """
    if cache is None:
        return Figure(None, "no reference figure: without the cache each replica downloads the weights from Hugging Face")
    share = cache.throughput_mibps / max(replicas, 1)
    return Figure(
        cache.weight_bytes / (share * MIB),
        f"{cache.weight_bytes / 2**30:.1f} GiB of weights at {cache.throughput_mibps:,} MiB/s shared by {replicas} node(s): "
        f"{share:,.0f} MiB/s each",
    )


def throughput_for(replicas: int) -> int:
    """The provisioned throughput that gives each of ``replicas`` nodes the reference's rate when all wake at once."""
    return THROUGHPUT_PER_NODE_MIBPS * max(replicas, 1)


@dataclass(frozen=True)
class Sizing:
    """The cache's throughput sized so each node of the wake reads at the reference's rate, and what that trades."""

    throughput_mibps: int
    weights: Figure
    # Provisioned throughput bills per MiB/s-month (cache.pricePerMibpsMonth); the wake's nodes bill per hour.
    extra_per_month: float
    saves_per_wake: float | None

    def break_even_wakes_per_month(self) -> float | None:
        """Wakes a month above which the sized cache costs less than the node time it saves."""
        if self.extra_per_month == 0:
            return 0.0
        if not self.saves_per_wake:
            return None
        return round(self.extra_per_month / self.saves_per_wake, 1)

    def as_output(self) -> dict[str, object]:
        return {
            "throughputMibps": self.throughput_mibps,
            "weights": self.weights.as_output(),
            "extraPerMonth": round(self.extra_per_month, 2),
            "savesPerWake": self.saves_per_wake,
            "breakEvenWakesPerMonth": self.break_even_wakes_per_month(),
        }


@dataclass(frozen=True)
class ColdStart:
    """The expected cold start of one wake to ``replicas`` replicas, and what it costs."""

    replicas: int
    node: Figure
    image: Figure
    weights: Figure
    compile_cold: Figure
    compile_warm: Figure
    # The first answer's kernel compiles, paid before Ready with cold caches; none with warm ones.
    first_answer_cold: Figure
    # Informational: a warm wake, first answer included, with only vLLM's own cache, as before the JIT caches moved to the bucket.
    compile_cache_only: Figure
    price_per_node_hour: float | None
    # Set when the cache's throughput is below what gives each node of this wake the reference's rate.
    sizing: Sizing | None = None
    # Replicas of the wake on reserved nodes: their node time is billed by the reservation whether or not they wake.
    committed_replicas: int = 0

    def seconds(self, *, warm: bool) -> float | None:
        """The whole wake, to the last replica Ready (its first answer); None when a phase has no figure."""
        vllm = (self.compile_warm,) if warm else (self.compile_cold, self.first_answer_cold)
        phases = (self.node, self.image, self.weights, *vllm)
        if any(p.seconds is None for p in phases):
            return None
        return sum(p.seconds or 0.0 for p in phases)

    def cost(self, *, warm: bool) -> float | None:
        """Dollars a wake adds to the bill before the first token: replicas beyond the reserved ones x price x duration."""
        return self._node_time(self.replicas - self.committed_replicas, warm)

    def committed_cost(self, *, warm: bool) -> float | None:
        """The reserved replicas' node time over the wake: billed by the reservation whether or not they wake."""
        return self._node_time(self.committed_replicas, warm)

    def _node_time(self, replicas: int, warm: bool) -> float | None:
        seconds = self.seconds(warm=warm)
        if seconds is None or self.price_per_node_hour is None:
            return None
        return round(replicas * self.price_per_node_hour * seconds / 3600, 2)

    def as_output(self) -> dict[str, object]:
        figures: dict[str, object] = {
            "replicas": self.replicas,
            "phases": {
                "nodeProvisioning": self.node.as_output(),
                "image": self.image.as_output(),
                "weights": self.weights.as_output(),
                "compileColdCache": self.compile_cold.as_output(),
                "compileWarmCache": self.compile_warm.as_output(),
                "firstAnswerColdKernels": self.first_answer_cold.as_output(),
                "compileCacheOnly": self.compile_cache_only.as_output(),
            },
            "minutes": {
                "coldCompileCache": _minutes(self.seconds(warm=False)),
                "warmCompileCache": _minutes(self.seconds(warm=True)),
            },
            "wakeCost": {"coldCompileCache": self.cost(warm=False), "warmCompileCache": self.cost(warm=True)},
        }
        if self.committed_replicas:
            figures["wakeCostOnReservation"] = {
                "replicas": self.committed_replicas,
                "coldCompileCache": self.committed_cost(warm=False),
                "warmCompileCache": self.committed_cost(warm=True),
                "basis": "node time of the replicas on reserved nodes: billed by the reservation whether or not they wake, "
                "so not part of wakeCost",
            }
        if self.sizing is not None:
            figures["cacheSizedForWake"] = self.sizing.as_output()
        return figures


def _minutes(seconds: float | None) -> float | None:
    return None if seconds is None else math.ceil(seconds / 6) / 10


def sizing(cache: CacheDisk | None, replicas: int, price_per_node_hour: float | None, committed_replicas: int = 0) -> Sizing | None:
    """The throughput a wake to ``replicas`` needs for the reference's per-node rate; None when the cache has it.

    A faster wake saves money only on the replicas beyond the reserved ones: those are billed anyway."""
    needed = throughput_for(replicas)
    if cache is None or needed <= cache.throughput_mibps:
        return None
    now, sized = weights(cache, replicas), weights(replace(cache, throughput_mibps=needed), replicas)
    saved = (now.seconds or 0.0) - (sized.seconds or 0.0)
    return Sizing(
        throughput_mibps=needed,
        weights=sized,
        extra_per_month=(needed - cache.throughput_mibps) * cache.price_per_mibps_month,
        saves_per_wake=None
        if price_per_node_hour is None
        else round((replicas - committed_replicas) * price_per_node_hour * saved / 3600, 2),
    )


@dataclass(frozen=True)
class Wake:
    """What the cold-start estimate reads: a wake to the stack's most replicas, as the plan decided it."""

    replicas: int
    # The capacity mode tried first, the image as the nodes pull it and the stack's region.
    first_step: str
    image_ref: str
    region: str
    cache: CacheDisk | None
    compile_cache: bool
    price_per_node_hour: float | None
    # Replicas of the wake that land on reserved nodes (billed anyway).
    committed_replicas: int = 0


def expected(wake: Wake) -> ColdStart | None:
    """The cold start of a wake to the stack's most replicas; None for a stack that never serves."""
    if wake.replicas == 0:
        return None
    return ColdStart(
        replicas=wake.replicas,
        node=node_provisioning(wake.first_step),
        image=image(wake.image_ref, wake.region),
        weights=weights(wake.cache, wake.replicas),
        compile_cold=Figure(COMPILE_COLD_SECONDS, COMPILE_COLD_SOURCE),
        compile_warm=Figure(COMPILE_WARM_SECONDS, COMPILE_WARM_SOURCE)
        if wake.compile_cache
        else Figure(
            COMPILE_COLD_SECONDS + FIRST_ANSWER_COLD_SECONDS,
            "the compile cache is off (VLLM_DISABLE_COMPILE_CACHE): every wake compiles, its first answer included",
        ),
        first_answer_cold=Figure(FIRST_ANSWER_COLD_SECONDS, FIRST_ANSWER_SOURCE),
        compile_cache_only=Figure(COMPILE_CACHE_ONLY_SECONDS, COMPILE_CACHE_ONLY_SOURCE),
        price_per_node_hour=wake.price_per_node_hour,
        sizing=sizing(wake.cache, wake.replicas, wake.price_per_node_hour, wake.committed_replicas),
        committed_replicas=wake.committed_replicas,
    )
