"""Throughput and cost estimates from the reference measurements (docs/reference.md).

They hold only for the reference model, serving profile and workload; for
anything else the estimate says that no reference figure exists. The plan
decides which applies and hands over a ``Costing``: the estimates read nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from facts.kubernetes import quantity
from plan.batch_plan import BatchPlan
from plan.cold_start_estimate import CacheDisk, ColdStart

# Measured total tokens/s (input + output) by node count, ClusterIP routing.
MEASURED_TOKENS_PER_SECOND: dict[int, float] = {1: 95_317, 2: 190_000, 4: 376_074, 8: 740_192, 12: 1_103_941}
# Measured throughput lost to the Inference Gateway (ext_proc hop through one EPP).
MEASURED_GATEWAY_OVERHEAD: dict[int, float] = {2: 0.31, 4: 0.35, 8: 0.37}
# The load the measurements were taken at: ~2,000 concurrent requests per node, of 1,024 input and 512 output tokens.
MEASURED_CONCURRENCY_PER_NODE = 2000
MEASURED_TOKENS_PER_REQUEST = 1024 + 512
CLUSTER_FEE_PER_HOUR = 0.10
# List prices of one A4 node-hour, 2026. Flex-start has no reference figure;
# set capacity.pricePerNodeHour to estimate it.
LIST_PRICE_PER_NODE_HOUR: dict[str, float] = {"spot": 32.61, "reservation": 88.93}
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class GatewayPods:
    """Gateway routing as the estimates see it: the endpoint picker's Pods and the load balancer, with their prices."""

    endpoint_picker_cpu: str
    endpoint_picker_memory: str
    endpoint_picker_replicas: int
    price_per_vcpu_hour: float
    price_per_gib_hour: float
    exposure: str
    load_balancer_price_per_hour: float


@dataclass(frozen=True)
class Commitment:
    """Reserved A4 nodes: billed every hour of the reservation, whether or not replicas run on them."""

    reservation: str
    # None: a named reservation whose size the stack does not state, and no replica to assume it from.
    nodes: int | None
    price_per_node_hour: float
    # Where the size comes from: created, stated, or assumed.
    source: str
    # Whether replicas land on it first (the first capacity step): then they add nothing to the bill up to its size.
    first: bool = True
    # A created calendar reservation: its term, which cannot be cancelled once submitted.
    start_time: str | None = None
    end_time: str | None = None
    hours: float | None = None

    @property
    def cost_per_hour(self) -> float | None:
        return None if self.nodes is None else self.nodes * self.price_per_node_hour

    @property
    def label(self) -> str:
        size = "size unknown" if self.nodes is None else f"{self.nodes} A4 node{'s' if self.nodes != 1 else ''}"
        return f"reservation {self.reservation} ({size}), billed whether or not replicas run"

    def as_output(self) -> dict[str, object]:
        cost = self.cost_per_hour
        figures: dict[str, object] = {
            "reservation": self.reservation,
            "nodes": self.nodes,
            "pricePerNodeHour": self.price_per_node_hour,
            "costPerHour": None if cost is None else round(cost, 2),
            "basis": self.source,
        }
        if self.hours is not None and cost is not None:
            figures["term"] = {
                "startTime": self.start_time,
                "endTime": self.end_time,
                "hours": round(self.hours, 2),
                "totalUsd": round(cost * self.hours, 2),
            }
        return figures


@dataclass(frozen=True)
class Costing:
    """What the estimates read: the replica counts, the prices and whether a reference figure applies."""

    nodes: int
    max_replicas: int
    # With autoscaling, the fewest replicas: the cost range spans them to the most. None without.
    min_replicas: int | None
    price_per_node_hour: float | None
    cache: CacheDisk | None
    gateway: GatewayPods | None
    # Why no reference figure applies to the stack, or None when one does.
    unmeasured: str | None
    # Input + output tokens of one request of the stack's workload.
    tokens_per_request: int = MEASURED_TOKENS_PER_REQUEST
    # Reserved nodes the stack's replicas run on: billed whether or not they do. None off reservations.
    commitment: Commitment | None = None
    # False for an embedding model: it generates no tokens, so no tokens/s figure applies (`unmeasured` says why).
    generates: bool = True

    @property
    def committed_nodes(self) -> int:
        """Replicas up to this count add nothing to the bill: their nodes are billed by the reservation anyway."""
        commitment = self.commitment
        return (commitment.nodes or 0) if commitment is not None and commitment.first else 0


@dataclass(frozen=True)
class Estimate:
    tokens_per_second: int | None
    cost_per_hour: float | None
    dollars_per_million_tokens: float | None
    basis: str
    # With autoscaling: the cost per hour at the fewest and the most replicas.
    cost_range: tuple[float | None, float | None] | None = None
    # What stays and bills with no replica running, per hour (None: a reservation of unknown size).
    idle: tuple[tuple[str, float | None], ...] = ()
    # A wake to the most replicas: its phases and what it costs before the first token.
    cold_start: ColdStart | None = None
    # Reserved capacity, billed whether or not replicas run; part of every cost above.
    committed: Commitment | None = None
    # A batch sent to the stack at zero replicas, from the wake to zero (autoscaled stacks).
    batch: BatchPlan | None = None

    def as_output(self) -> dict[str, object]:
        figures: dict[str, object] = {
            "tokensPerSecond": self.tokens_per_second,
            "costPerHour": self.cost_per_hour,
            "dollarsPerMillionTokens": self.dollars_per_million_tokens,
            "basis": self.basis,
        }
        if self.cost_range is not None:
            figures["costPerHourRange"] = {"fewest": self.cost_range[0], "most": self.cost_range[1]}
        if self.committed is not None:
            figures["committed"] = self.committed.as_output()
        if self.idle:
            costs = [cost for _, cost in self.idle]
            figures["whenIdle"] = {
                "costPerHour": None if None in costs else round(sum(cost or 0.0 for cost in costs), 2),
                "keeps": {item: None if cost is None else round(cost, 4) for item, cost in self.idle},
            }
        if self.cold_start is not None:
            figures["coldStart"] = self.cold_start.as_output()
        if self.batch is not None:
            figures["batchPlan"] = self.batch.as_output()
        return figures


def _interpolate(table: dict[int, float], nodes: int) -> tuple[float, bool]:
    """The table's value at ``nodes``, linear between measured points; True when outside them."""
    points = sorted(table)
    if nodes <= points[0]:
        return table[points[0]], nodes < points[0]
    if nodes >= points[-1]:
        return table[points[-1]], nodes > points[-1]
    for low, high in pairwise(points):
        if low <= nodes <= high:
            share = (nodes - low) / (high - low)
            return table[low] + share * (table[high] - table[low]), False
    raise AssertionError("unreachable: nodes lies between the table's points")


def scaling_efficiency(nodes: int) -> tuple[float, bool]:
    per_node = MEASURED_TOKENS_PER_SECOND[1]
    efficiency = {n: total / (n * per_node) for n, total in MEASURED_TOKENS_PER_SECOND.items()}
    return _interpolate(efficiency, nodes)


def price_per_node_hour(configured: float | None, first_step: str) -> float | None:
    """The configured price, else the list price of the preferred step."""
    if configured is not None:
        return configured
    return LIST_PRICE_PER_NODE_HOUR.get(first_step)


def idle_bill(costing: Costing) -> list[tuple[str, float | None]]:
    """What a stack keeps, and bills per hour, with no replica running: its reservation, the cluster and every disk and snapshot."""
    return [(item, cost) for item, cost, _ in _kept(costing)]


def _kept(costing: Costing) -> list[tuple[str, float | None, bool]]:
    """The idle bill's items, each with whether every model of a stack shares it (the reservation, the cluster, the
    load balancer) or each has its own (its cache, its endpoint picker).

    The cache's writable disk is released once its snapshot is ready, so the read-only
    disk and the snapshot are what stays; the snapshot is counted at the disk's size,
    an upper bound of what it stores.
    """
    bill: list[tuple[str, float | None, bool]] = []
    if costing.commitment is not None:
        bill.append((costing.commitment.label, costing.commitment.cost_per_hour, True))
    bill.append(("cluster fee", CLUSTER_FEE_PER_HOUR, True))
    cache = costing.cache
    if cache is not None:
        disk = cache.size_gi * cache.price_per_gib_month + cache.throughput_mibps * cache.price_per_mibps_month
        bill.append(("model cache disk (Hyperdisk ML, read-only)", disk / HOURS_PER_MONTH, False))
        bill.append(("model cache snapshot", cache.size_gi * cache.snapshot_price_per_gib_month / HOURS_PER_MONTH, False))
    if costing.gateway is not None:
        (picker, picker_cost), (balancer, balancer_cost) = gateway_bill(costing.gateway)
        # One endpoint picker per model's pool (the extension's one-to-one rule); one load balancer for the stack.
        bill.extend([(picker, picker_cost, False), (balancer, balancer_cost, True)])
    return bill


def gateway_bill(gateway: GatewayPods) -> list[tuple[str, float]]:
    """Gateway routing's own bill per hour: the endpoint picker's Pods and the load balancer, both kept at zero replicas."""
    cpu = float(quantity(gateway.endpoint_picker_cpu))
    gib = float(quantity(gateway.endpoint_picker_memory)) / 2**30
    picker = gateway.endpoint_picker_replicas * (cpu * gateway.price_per_vcpu_hour + gib * gateway.price_per_gib_hour)
    balancer = "internal Application Load Balancer" if gateway.exposure == "internal" else "regional external Application Load Balancer"
    return [("endpoint picker (Autopilot Pods)", picker), (balancer, gateway.load_balancer_price_per_hour)]


def cost_per_hour(costing: Costing, nodes: int | None = None) -> float | None:
    """``nodes`` (default: the stack's) beyond the reserved ones at the capacity's price, plus what the stack keeps
    (its reservation included); None without a price or with a reservation of unknown size."""
    nodes = costing.nodes if nodes is None else nodes
    beyond = max(nodes - costing.committed_nodes, 0)
    price = costing.price_per_node_hour
    kept = [cost for _, cost in idle_bill(costing)]
    if (beyond and price is None) or None in kept:
        return None
    return round(beyond * (price or 0.0) + sum(cost or 0.0 for cost in kept), 2)


@dataclass(frozen=True)
class Total:
    """A stack of several models in all: every model at its replicas, what the models share counted once."""

    replicas: int
    cost_per_hour: float | None
    # With autoscaling: every model at its fewest replicas, and every model at its most.
    cost_range: tuple[float | None, float | None] | None
    # The shared items once, then each model's own under its short name.
    idle: tuple[tuple[str, float | None], ...]

    def as_output(self) -> dict[str, object]:
        costs = [cost for _, cost in self.idle]
        figures: dict[str, object] = {
            "replicas": self.replicas,
            "costPerHour": self.cost_per_hour,
            "basis": "every model at its replicas; the cluster fee, a reservation and anything else the models share "
            "counted once, each model's own cache under its name",
        }
        if self.cost_range is not None:
            figures["costPerHourRange"] = {"fewest": self.cost_range[0], "most": self.cost_range[1]}
        figures["whenIdle"] = {
            "costPerHour": None if None in costs else round(sum(cost or 0.0 for cost in costs), 2),
            "keeps": {item: None if cost is None else round(cost, 4) for item, cost in self.idle},
        }
        return figures


def served_nodes(costing: Costing, scaled_to_zero: bool) -> int:
    """The nodes a model's figures count: none scaled to zero, else its replicas (autoscaled from 0: its most)."""
    return 0 if scaled_to_zero else costing.nodes or costing.max_replicas


def stack_total(models: Sequence[tuple[str, Costing, int]]) -> Total:
    """Each model's (short name, costing, nodes it serves on) in all. The capacity and its price are the stack's,
    so a reservation's nodes are spent once across the models, not once per model."""
    first = models[0][1]
    shared = [(item, cost) for item, cost, shared in _kept(first) if shared]
    own = [(f"{name}: {item}", cost) for name, costing, _ in models for item, cost, shared in _kept(costing) if not shared]
    idle = (*shared, *own)

    kept = [usd for _, usd in idle]

    def cost(nodes: int) -> float | None:
        beyond = max(nodes - first.committed_nodes, 0)
        if (beyond and first.price_per_node_hour is None) or None in kept:
            return None
        return round(beyond * (first.price_per_node_hour or 0.0) + sum(usd or 0.0 for usd in kept), 2)

    replicas = sum(nodes for _, _, nodes in models)
    scaled = any(costing.min_replicas is not None for _, costing, _ in models)
    fewest = sum(costing.nodes if costing.min_replicas is None else costing.min_replicas for _, costing, _ in models)
    most = sum(costing.max_replicas for _, costing, _ in models)
    return Total(replicas, cost(replicas), (cost(fewest), cost(most)) if scaled else None, idle)


def estimate(costing: Costing, *, scaled_to_zero: bool, cold_start: ColdStart | None) -> Estimate:
    """The figures at ``nodes`` (autoscaled from 0: at the most replicas); with autoscaling also the cost at the fewest and most.

    Whether the stack is scaled to zero is the plan's decision (plan/stack.py), not made here.
    """
    figures = replace(
        _estimate(costing, scaled_to_zero), idle=tuple(idle_bill(costing)), cold_start=cold_start, committed=costing.commitment
    )
    if costing.min_replicas is None:
        return figures
    cost_range = (cost_per_hour(costing, costing.min_replicas), cost_per_hour(costing, costing.max_replicas))
    return replace(figures, cost_range=cost_range)


def _no_cost(costing: Costing) -> str:
    if costing.commitment is not None and costing.commitment.nodes is None:
        return f"; reservation {costing.commitment.reservation} has no stated size: set capacity.reservation.nodes"
    return "; no price for this capacity: set capacity.pricePerNodeHour"


def _estimate(costing: Costing, scaled_to_zero: bool) -> Estimate:
    # Autoscaled from 0 replicas: the figures of a batch at the most replicas.
    nodes = served_nodes(costing, scaled_to_zero)
    cost = cost_per_hour(costing, nodes)
    price_note = "" if cost is not None else _no_cost(costing)
    if scaled_to_zero:
        kept = "reservation, cluster and cache" if costing.commitment is not None else "cluster and cache"
        return Estimate(0, cost, None, f"scaled to zero: idle cost of {kept}" + price_note)
    if not costing.generates:
        return Estimate(None, cost, None, f"no tokens/s figure: {costing.unmeasured}" + price_note)
    tokens, basis = throughput(costing, nodes)
    per_million = round(cost / (tokens * 3600) * 1_000_000, 3) if cost is not None else None
    return Estimate(round(tokens), cost, per_million, basis + price_note)


def throughput(costing: Costing, nodes: int) -> tuple[float, str]:
    """Input + output tokens/s of ``nodes`` replicas, and what the figure rests on.

    Measured for the reference; elsewhere an estimate from a stated model: the reference's tokens/s held
    for the stack, whatever its tokens per request. Prompt tokens cost an engine less than generated
    ones, so a prompt-heavy workload likely runs faster than this, a larger model slower.
    """
    efficiency, extrapolated = scaling_efficiency(nodes)
    tokens = MEASURED_TOKENS_PER_SECOND[1] * nodes * efficiency
    plural = "s" if nodes > 1 else ""
    basis = f"reference: {MEASURED_TOKENS_PER_SECOND[1]:,.0f} tok/s per node x {efficiency:.1%} scaling efficiency at {nodes} node{plural}"
    if costing.gateway is not None:
        overhead, outside = _interpolate(MEASURED_GATEWAY_OVERHEAD, nodes)
        tokens *= 1 - overhead
        extrapolated = extrapolated or outside
        basis += f", minus {overhead:.0%} Inference Gateway overhead"
    if extrapolated:
        basis += " (extrapolated beyond the measured node counts)"
    if costing.unmeasured is not None:
        basis = (
            f"estimate, no reference figure: {costing.unmeasured}; the reference's tokens/s (input + output) is held for this "
            f"stack at {costing.tokens_per_request:,} tokens per request (reference: {MEASURED_TOKENS_PER_REQUEST:,}); prompt "
            "tokens cost less than generated ones, so a prompt-heavy workload likely runs faster and a larger model slower: "
            f"measure it (benchmark.enabled). {basis}"
        )
    return tokens, basis
