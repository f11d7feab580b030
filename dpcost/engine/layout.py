"""A parallel layout as data, and the process groups it makes, as Megatron-Core builds them.

GPUs = TP x CP x PP x DP. Ranks are numbered by one order of the dimensions, fastest-varying first
(megatron/core/parallel_state.py `initialize_model_parallel`, default order "tp-cp-ep-dp-pp"): a rank's global
number is sum(index_d x stride_d) with stride_d the product of the sizes before d in the order
(`generate_masked_orthogonal_rank_groups`). A group of kind "dp" holds the ranks that differ only in their DP
index; "dp-cp" (the dense gradients' reduction group) those that differ in DP or CP.

Experts are laid out on their own grid over the same GPUs (parallel_state.py's expert RankGenerator): expert
tensor parallelism ETP (default TP) x EP x expert-DP x PP, in the same order with CP dropped, where
expert-DP = GPUs / (ETP x EP x PP). EP is so carved out of DP x CP: the experts' ETP x EP ranks of one stage are
a block of the dense TP x CP x DP ranks.

Nodes hold contiguous blocks of ranks (the launcher's rank = node x GPUs per node + local rank), so where a group's
ranks sit follows from its members (placement.place_group).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from itertools import product

from dpcost.frozen import frozen

__all__ = [
    "DEFAULT_ORDER",
    "DIMENSIONS",
    "Layout",
    "group_bases",
    "group_kinds",
    "group_members",
    "group_of_rank_zero",
    "instance_members",
    "translates_place_alike",
]

DEFAULT_ORDER = "tp-cp-ep-dp-pp"  # megatron/core/parallel_state.py initialize_model_parallel(order=...)
DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")


@frozen
class Layout:
    """Sizes of each parallel dimension and the rank order. `ep` and `etp` shape the experts' grid only."""

    tp: int = 1
    cp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    etp: int | None = None  # expert tensor parallelism; None: TP's size
    order: str = DEFAULT_ORDER

    def __post_init__(self) -> None:
        for name in ("tp", "cp", "pp", "dp", "ep"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name}: must be a positive integer, got {getattr(self, name)}")
        if self.etp is not None and self.etp < 1:
            raise ValueError(f"--etp: must be a positive integer, got {self.etp}")
        tokens = self.order.split("-")
        unknown = [t for t in tokens if t not in DIMENSIONS]
        if unknown or len(set(tokens)) != len(tokens):
            raise ValueError(
                f"--order: {self.order!r} must name each of {', '.join(DIMENSIONS)} at most once, e.g. {DEFAULT_ORDER}"
            )
        missing = [d for d in DIMENSIONS if d not in tokens and max(self.sizes()[d], self.sizes(True)[d]) > 1]
        if missing:
            raise ValueError(f"--order: {self.order!r} leaves out {', '.join(missing)}, whose size is not 1")
        expert_grid = self.expert_tp * self.ep * self.pp
        if self.gpus % expert_grid:
            flag = "--etp" if self.etp is not None and self.ep == 1 else "--ep"  # the flag the user set to it
            raise ValueError(
                f"{flag}: ETP x EP x PP = {self.expert_tp} x {self.ep} x {self.pp} = {expert_grid} must divide the "
                f"{self.gpus} GPUs (TP x CP x PP x DP), as Megatron-Core requires"
            )
        if self.pp > 1 and self.ordered()[-1] != "pp" and self.expert_dp != self.dp:
            raise ValueError(
                f"--order: {self.order!r} does not end in pp, so the experts' data-parallel size "
                f"({self.expert_dp}) must equal DP ({self.dp}), as Megatron-Core requires (parallel_state.py)"
            )

    @property
    def gpus(self) -> int:
        """TP x CP x PP x DP."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def expert_tp(self) -> int:
        return self.etp if self.etp is not None else self.tp

    @property
    def expert_dp(self) -> int:
        """The experts' data-parallel size: GPUs / (ETP x EP x PP) (parallel_state.py)."""
        return self.gpus // (self.expert_tp * self.ep * self.pp)

    def ordered(self) -> list[str]:
        """The order, fastest-varying first, with the dimensions it leaves out (all of size 1) appended, as
        Megatron's RankGenerator does."""
        tokens = self.order.split("-")
        return tokens + [d for d in DIMENSIONS if d not in tokens]

    def sizes(self, experts: bool = False) -> dict[str, int]:
        """Each dimension's size on the dense grid, or on the experts' grid (CP folded into expert-DP)."""
        if experts:
            return {"tp": self.expert_tp, "cp": 1, "ep": self.ep, "dp": self.expert_dp, "pp": self.pp}
        return {"tp": self.tp, "cp": self.cp, "ep": 1, "dp": self.dp, "pp": self.pp}


def group_kinds() -> tuple[str, ...]:
    """The groups a layout makes: dense TP, CP, PP, DP and DP x CP; the experts' ETP, EP, expert-DP, and ETP x EP
    (parallel_state.py's expert tensor-and-model-parallel group, the allgather dispatcher's tp_ep_group)."""
    return ("tp", "cp", "pp", "dp", "dp-cp", "etp", "ep", "edp", "etp-ep")


def _grid(layout: Layout, kind: str) -> tuple[dict[str, int], dict[str, int], list[str], list[str]]:
    """(sizes, strides, the dimensions that vary inside a group of `kind`, those that pick the group)."""
    experts = kind in ("etp", "ep", "edp", "etp-ep")
    varying = {"etp": ("tp",), "edp": ("dp",), "etp-ep": ("tp", "ep")}.get(kind, tuple(kind.split("-")))
    if any(d not in DIMENSIONS for d in varying):
        raise ValueError(f"unknown group {kind!r}; known: {', '.join(group_kinds())}")
    sizes = layout.sizes(experts)
    order = layout.ordered()
    strides = dict(zip(order, (math.prod(sizes[d] for d in order[:i]) for i in range(len(order))), strict=True))
    return sizes, strides, [d for d in order if d in varying], [d for d in order if d not in varying]


def group_shape(layout: Layout, kind: str) -> tuple[tuple[int, int], ...]:
    """(stride, size) of each dimension that varies inside a group of `kind`: all that sets its members' ranks."""
    sizes, strides, inside, _ = _grid(layout, kind)
    return tuple((strides[d], sizes[d]) for d in inside)


def instance_members(layout: Layout, kind: str, instances: int) -> tuple[list[int], list[int]]:
    """Rank 0's distributed-optimizer instance in its group of `kind` ("dp-cp" or "edp"), and its group across the
    instances: the group's ranks in Megatron's order (the order's first dimension fastest), cut into `instances`
    consecutive parts, and one rank of each part (parallel_state.py intra_partial_dp_ranks_with_cp,
    intra_partial_expert_data_parallel)."""
    listing = [0]
    for step, size in group_shape(layout, kind):
        listing = [m + i * step for i in range(size) for m in listing]
    part = len(listing) // instances
    return listing[:part], listing[::part]


def group_of_rank_zero(layout: Layout, kind: str) -> list[int]:
    """The group of `kind` that holds rank 0 (Megatron's groups of one kind are translates of it): its own
    dimensions' indices times their strides, the others at 0."""
    members = [0]
    for step, size in group_shape(layout, kind):  # one dimension at a time: groups of up to all the GPUs
        members = [m + i * step for i in range(size) for m in members]
    return sorted(members)


def _shape_of(layout: Layout, kind: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """(stride, size) of the dimensions inside a group of `kind`, and of those that pick the group (size > 1)."""
    sizes, strides, inside, outside = _grid(layout, kind)
    return (
        tuple((strides[d], sizes[d]) for d in inside if sizes[d] > 1),
        tuple((strides[d], sizes[d]) for d in outside if sizes[d] > 1),
    )


def group_bases(layout: Layout, kind: str, period: int) -> tuple[int, ...]:
    """Where the groups of `kind` start (their lowest rank's offset from rank 0's group), modulo `period`: the
    distinct translates of group_of_rank_zero that a topology whose domains repeat every `period` ranks can tell
    apart."""
    return _bases(_shape_of(layout, kind)[1], period)


@lru_cache(maxsize=4096)
def _bases(picking: tuple[tuple[int, int], ...], period: int) -> tuple[int, ...]:
    bases = {0}
    for stride, size in picking:
        if stride % period:  # a stride of whole periods moves no start modulo the period
            bases = {(b + i * stride) % period for b in bases for i in range(size)}
    return tuple(sorted(bases))


def translates_place_alike(layout: Layout, kind: str, domain_sizes: Sequence[int]) -> bool:
    """Whether every group of `kind` sits in domains of each size S as rank 0's group does. A group starting at b
    has its members at b + its offsets, each offset a multiple of g = gcd(S, its strides); none is carried into
    another domain than rank 0's group's member is when the offsets are whole domains (g = S), when b mod S stays
    below g, when the group fits in h = gcd(S, the starts' strides) ranks, the alignment of every start, or when
    every group fits in the domain its start is in. Else (TP 3 on 8-GPU nodes: ranks 0-2 on one node, 6-8 across
    two) they may not: False, which may be cautious."""
    own, picking = _shape_of(layout, kind)
    return _alike(own, picking, tuple(domain_sizes))


@lru_cache(maxsize=4096)
def _alike(
    own: tuple[tuple[int, int], ...], picking: tuple[tuple[int, int], ...], domain_sizes: tuple[int, ...]
) -> bool:
    if not own:
        return True
    span = sum((size - 1) * stride for stride, size in own) + 1
    for domain in domain_sizes:
        g = math.gcd(domain, *(stride for stride, _ in own))
        reach = sum((size - 1) * stride for stride, size in picking if stride % domain)
        h = math.gcd(domain, *(stride for stride, _ in picking))
        if g == domain or reach < g or span <= h:
            continue
        if max(_bases(picking, domain)) + span > domain:  # some group may leave the domain its start is in
            return False
    return True


def group_members(layout: Layout, kind: str) -> list[list[int]]:
    """Every group of `kind`, as lists of global ranks (parallel_state.py generate_masked_orthogonal_rank_groups:
    the group's own dimensions vary inside a group, the others pick the group)."""
    sizes, strides, inside, outside = _grid(layout, kind)
    groups = []
    for picked in product(*(range(sizes[d]) for d in reversed(outside))):
        base = sum(i * strides[d] for i, d in zip(picked, reversed(outside), strict=True))
        members = [
            base + sum(i * strides[d] for i, d in zip(index, reversed(inside), strict=True))
            for index in product(*(range(sizes[d]) for d in reversed(inside)))
        ]
        groups.append(sorted(members))
    return sorted(groups)
