"""Which algorithms NCCL runs for a call, and which extra ones dpcost prices only when forced.

NCCL's candidates (docs/sources/nccl-tuning.md, from NVIDIA/nccl src/graph/tuning.cc and src/enqueue.cc at the
version in dpcost/engine/nccl_tables.py):
- all-reduce: Ring and Tree always; NVLS inside one NVSwitch domain (across domains only with SHARP on the
  fabric); NVLSTree across domains where NVLS exists; CollNet where the fabric reduces (SHARP). NVLS needs two or
  more of the call's GPUs in a domain: a group of one rank per node (TP filling the node) has none.
- reduce-scatter and all-gather: Ring; PAT only with one GPU per node; NVLS inside one NVSwitch domain (across
  domains only with SHARP); CollNet (direct) with SHARP and one NIC per GPU. No Tree.
- broadcast and reduce: Ring.

What-ifs, costed only when forced (`--algorithm`), never chosen: `hierarchical`, a reduce-scatter inside the
domain, the op across domains on S/g and an all-gather back. No framework issues it as one call (DDP, FSDP,
DeepSpeed and Megatron each call ncclAllReduce / ncclReduceScatter / ncclAllGather on the whole group).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpcost.engine.memo import per_object_and_key
from dpcost.engine.placement import Placement
from dpcost.specs import TopologySpec

if TYPE_CHECKING:
    from dpcost.options import Options

__all__ = [
    "ALGORITHMS",
    "NCCL_ALGORITHMS",
    "WHAT_IF",
    "environment",
    "forcible",
    "nccl_candidates",
    "plan_environment",
    "require",
]

NCCL_ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet", "pat")
WHAT_IF = ("hierarchical",)
ALGORITHMS = ("ring", "tree", "hierarchical", "nvls", "nvls_tree", "collnet", "pat")  # what --algorithm takes
REDUCTIONS = ("all_reduce", "reduce_scatter", "all_gather")


def environment(
    topology: TopologySpec, nvls: bool | None = None, collnet: bool | None = None, nccl_algo: str | None = None
) -> TopologySpec:
    """The topology as the run's environment leaves it to NCCL: with NVLS off (NCCL_NVLS_ENABLE=0, or a system
    without the fabric manager or IMEX channels NVLS needs: src/transport/nvls.cc) or CollNet off
    (NCCL_COLLNET_ENABLE, SHARP's plugin absent), the tiers' in-network reduction of that kind is not there for
    NCCL to use; `nccl_algo` (NCCL_ALGO) the algorithms NCCL may choose among (collectives.fastest). `None` keeps
    the topology's own setting (its `nvls`, `collnet` and `nccl_algo` fields)."""
    if nccl_algo is not None and nccl_algo != topology.nccl_algo:
        topology = topology.model_copy(update={"nccl_algo": nccl_algo})
    use_nvls = topology.nvls if nvls is None else nvls
    use_collnet = topology.collnet if collnet is None else collnet
    off = {kind for kind, on in (("nvls", use_nvls), ("sharp", use_collnet)) if not on}
    if not off or not any(t.in_network_reduction and t.in_network_reduction.kind in off for t in topology.tiers):
        return topology
    tiers = [
        t.model_copy(update={"in_network_reduction": None})
        if t.in_network_reduction is not None and t.in_network_reduction.kind in off
        else t
        for t in topology.tiers
    ]
    return topology.model_copy(update={"tiers": tiers, "nvls": use_nvls, "collnet": use_collnet})


def plan_environment(topology: TopologySpec, options: Options) -> TopologySpec:
    """The topology as a plan's --nvls, --collnet and --nccl-algo leave it (environment)."""
    c = options.communication
    return environment(topology, c.nvls, c.collnet, c.nccl_algo)


def _nvls(p: Placement) -> bool:
    """NVLink SHARP on the call's NVLink domains, with at least two of its GPUs in each (NCCL's ncclNvlsInit turns
    NVLS off for a communicator with fewer than two GPUs on the node: src/transport/nvls.cc)."""
    r = p.levels[0].tier.in_network_reduction
    return p.levels[0].scale_up and r is not None and r.kind == "nvls" and p.ppn >= 2


def _sharp(p: Placement) -> bool:
    """Every network tier the call crosses reduces in its switches (SHARP)."""
    return len(p.levels) > 1 and all(lv.tier.in_network_reduction is not None for lv in p.levels[1:])


def nccl_candidates(op: str, p: Placement) -> tuple[str, ...]:
    """The algorithms NCCL's tuner weighs for `op` on this placement, in NCCL's order."""
    return _candidates_on(p, op)


@per_object_and_key  # every call priced on a placement asks again
def _candidates_on(p: Placement, op: str) -> tuple[str, ...]:
    if op not in REDUCTIONS:
        return ("ring",)
    one_node = p.nodes == 1
    out = ["ring"]
    if op == "all_reduce":
        out.append("tree")
        if _nvls(p) and (one_node or _sharp(p)):
            out.append("nvls")
        if _nvls(p) and not one_node:
            out.append("nvls_tree")
        if _sharp(p):
            out.append("collnet")
        return tuple(out)
    if _nvls(p) and (one_node or _sharp(p)):
        out.append("nvls")
    if _sharp(p):
        out.append("collnet")
    if p.ppn == 1 and not one_node:
        out.append("pat")
    return tuple(out)


def forcible(op: str, p: Placement) -> tuple[str, ...]:
    """What `--algorithm` may force: NCCL's candidates, plus the hierarchical what-if where it is defined (every
    spanned domain full; inside one domain it is the ring)."""
    out = nccl_candidates(op, p)
    if op in REDUCTIONS and p.even:
        out += ("hierarchical",)
    return out


def require(op: str, p: Placement, algorithm: str, where: str) -> None:
    """Refuse an algorithm that does not exist for this call, naming the ones that do."""
    allowed = forcible(op, p)
    if algorithm not in allowed:
        domains = f"{p.nodes} NVLink domain{'' if p.nodes == 1 else 's'}"
        raise ValueError(
            f"{algorithm} is not available for {op} on {p.ranks} GPUs of {where} ({domains}); "
            f"available: {', '.join(allowed)}"
        )
