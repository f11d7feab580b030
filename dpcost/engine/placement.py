"""Where a collective's ranks sit: how many NVLink domains (nodes) they span, and which fabric tiers they cross.

A scheduler hands out whole GPUs, not whole domains: 128 GPUs of a 72-GPU NVL72 fabric are two racks of 64,
12 GPUs of 8-GPU nodes are two nodes of 6. dpcost spreads the ranks evenly over the fewest domains that hold
them (ceil(N / g) domains of N / D GPUs each), which is what NCCL's nNodes and ppn describe for such a job. Where a
domain is built of trays (a tier's `tray`: an NVL72 rack's 18 trays of 4 GPUs), job_view gives each rack the job
uses an equal segment of whole trays, so that its groups (a layout's TP, EP, DP) sit where its ranks do: NVIDIA's
benchmark launcher asks Slurm for GB200 and GB300 racks in such segments (dgxc-benchmarking cli/llmb-run job_launcher.py
_compute_segment_size at 841f5466: the greatest divisor of the job's trays that a rack's 18 hold, so 16 trays, 64
GPUs, for a power-of-two count; docs/sources/job-placement.md).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from dpcost.engine.memo import cached_property, per_object, per_object_and_key
from dpcost.frozen import frozen
from dpcost.specs import TierSpec, TopologySpec

__all__ = ["MAX_RANKS", "Level", "Placement", "check_ranks", "job_view", "place", "place_group"]

MAX_RANKS = 10_000_000


@frozen
class Level:
    """A tier as one collective sees it: `domain` ranks share one domain of it (the last may be unbounded).

    `scale_up` marks the NVLink tier seen from the GPUs; every other level is reached through the NIC."""

    tier: TierSpec
    domain: float
    scale_up: bool = False


@frozen
class Placement:
    """`ranks` GPUs over `nodes` NVLink domains, `ppn` (NCCL's ranks per node, N / nNodes) in each."""

    ranks: int
    nodes: int
    levels: tuple[Level, ...]  # lowest first, up to the tier whose domain holds every rank

    @property
    def ppn(self) -> float:
        return self.ranks / self.nodes

    @property
    def even(self) -> bool:
        """Every spanned domain below the top one is full (what the hierarchical phases need)."""
        return all(self.ranks % lv.domain == 0 for lv in self.levels[:-1])

    @property
    def partial_note(self) -> str:
        """Say so when the ranks leave NVLink domains part-filled."""
        g = self.levels[0].domain
        if self.nodes == 1 or self.ranks % g == 0:
            return ""
        per = (
            f"{self.ppn:g} GPUs per domain"
            if self.ppn == int(self.ppn)
            else f"{self.ppn:.3g} GPUs per domain on average"
        )
        return f"{self.ranks} GPUs fill {self.nodes} NVLink domains of {g:g} partly: costed as {per}"

    @property
    def tiers_crossed(self) -> list[str]:
        """The tiers the group's traffic uses: NVLink where two of its ranks share a domain, and every network tier
        up to the one that holds them all."""
        if self.ranks == 1:
            return []
        inside = [self.levels[0].tier.name] if self.levels[0].scale_up and self.levels[0].domain > 1 else []
        return inside + [lv.tier.name for lv in self.levels[1:]]

    def domains(self, level: int) -> int:
        """How many domains of levels[level] the ranks span (every one part-filled evenly)."""
        return spanned(self.ranks, self.levels[level].domain)

    @cached_property
    def rails(self) -> tuple[Level, ...]:
        """The tiers above the NVLink domain, seen by one rail: one rank per domain, domains counted in domains."""
        g = self.levels[0].domain
        return tuple(Level(lv.tier, lv.domain / g) for lv in self.levels[1:])

    @cached_property
    def shape(self) -> tuple[object, ...]:
        """What a price depends on of the placement (collectives._kept): the ranks, the domains, and each level's
        tier (by identity), domain and kind."""
        return (self.ranks, self.nodes, tuple((id(lv.tier), lv.domain, lv.scale_up) for lv in self.levels))


def spanned(ranks: float, domain: float) -> int:
    """Domains of size `domain` that `ranks` ranks need."""
    return 1 if domain >= ranks else math.ceil(ranks / domain - 1e-9)


def check_ranks(topology: TopologySpec, ranks: int) -> None:
    """Ranks this topology can hold: at least one, at most its size."""
    if ranks < 1:
        raise ValueError(f"must be a positive number of GPUs, got {ranks}")
    if ranks > MAX_RANKS:
        raise ValueError(f"{ranks} GPUs is beyond {MAX_RANKS:,}, larger than any machine built")
    if topology.max_gpus is not None and ranks > topology.max_gpus:
        top = topology.tiers[-1].name
        raise ValueError(
            f"{ranks} GPUs exceed {topology.name}'s {topology.max_gpus} (its last tier, {top}, holds no more; a "
            "topology file whose last tier is larger, or open, costs a larger job)"
        )


@per_object
def _views_of(topology: TopologySpec) -> dict[int, TopologySpec]:
    return {}


def _greatest_divisor_within(n: int, limit: int) -> int:
    """The greatest divisor of n not above limit, from the divisor pairs (d, n / d) with d <= sqrt(n)."""
    best = 1
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            for x in (d, n // d):
                if best < x <= limit:
                    best = x
    return best


def job_view(topology: TopologySpec, gpus: int) -> TopologySpec:
    """The topology as a job of `gpus` GPUs holds it (module docstring): where the NVLink domain is built of trays,
    S trays of each domain the job uses, S the greatest divisor of its trays that a domain holds (llmb-run's rule),
    and each tier above holding as many of those segments as it held whole domains. Unchanged where the job fills
    whole domains, fits in one, or is not whole trays."""
    first = topology.tiers[0]
    size, tray = first.size, first.tray
    if size is None or tray is None or gpus <= size or gpus % size == 0 or gpus % tray or gpus > MAX_RANKS:
        return topology
    views = _views_of(topology)
    if gpus not in views:
        used = tray * _greatest_divisor_within(gpus // tray, size // tray)
        tiers = [
            t.model_copy(update={"size": t.size * used // size}) if t.size is not None and t.size * used % size == 0
            else t
            for t in topology.tiers
        ]  # fmt: skip
        views[gpus] = topology.model_copy(update={"tiers": tiers})
    return views[gpus]


@per_object_and_key  # every plan of a batch places its groups again
def place(topology: TopologySpec, ranks: int) -> Placement:
    """The tiers a collective over `ranks` GPUs spans, lowest first, up to the one that holds them all."""
    check_ranks(topology, ranks)
    levels: list[Level] = []
    for i, tier in enumerate(topology.tiers):
        domain = float(tier.size) if tier.size is not None else math.inf
        levels.append(Level(tier, domain, scale_up=i == 0))
        if domain >= ranks:
            break
    nodes = spanned(ranks, levels[0].domain) if levels[0].scale_up else ranks
    return Placement(ranks, nodes, tuple(levels))


def place_group(topology: TopologySpec, members: Sequence[int]) -> Placement:
    """Where one process group's ranks sit, from their global ranks (nodes hold contiguous blocks: a rank's
    tier-k domain is rank // size_k). Each level's `domain` is the most of the group's ranks one domain of that tier
    holds, so a DP group of one rank per node (TP filling the node) is what NCCL sees: nNodes = its size, one rank
    per node, its traffic on one rail. Contiguous members place as `place` does."""
    ranks = len(members)
    check_ranks(topology, max(members) + 1)
    levels: list[Level] = []
    for i, tier in enumerate(topology.tiers):
        per = ranks if tier.size is None else max(Counter(map(tier.size.__rfloordiv__, members)).values())
        holds_all = per >= ranks
        domain = (math.inf if tier.size is None else float(tier.size)) if holds_all else float(per)
        levels.append(Level(tier, domain, scale_up=i == 0))
        if holds_all:
            break
    g = topology.tiers[0].size
    nodes = len(set(map(g.__rfloordiv__, members))) if g is not None else 1
    return Placement(ranks, nodes, tuple(levels))


def steps_per_level(ranks: int, levels: Sequence[Level], per_rank: int) -> list[int]:
    """Ring steps whose hop crosses exactly level k: NCCL's nsteps split into intra/inter, for every tier.

    With per_rank = 2 (all-reduce) there are 2(N-1) steps, 2(D_k - 1) of them leaving a tier-k domain."""
    crossing = [per_rank * (spanned(ranks, lv.domain) - 1) for lv in levels]
    steps = [per_rank * (ranks - 1) - crossing[0]]
    steps += [crossing[k - 1] - crossing[k] for k in range(1, len(levels))]
    return steps


def hop_share(ranks: int, levels: Sequence[Level]) -> list[float]:
    """Fraction of a ring's N hops that use each level's links.

    The NVLink tier carries the hops that stay inside a domain. A network level carries every hop that leaves
    a domain of the level below it (a hop between scalable units passes the NICs and the leaf uplinks); seen
    from one rail, every hop crosses the first network level."""
    leaving = [d if (d := spanned(ranks, lv.domain)) > 1 else 0 for lv in levels]
    first = (ranks - leaving[0]) / ranks if levels[0].scale_up else 1.0
    return [first] + [leaving[k - 1] / ranks for k in range(1, len(levels))]
