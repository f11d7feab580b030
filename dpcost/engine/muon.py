"""Muon: each hidden weight matrix's momentum orthogonalized by Newton-Schulz iterations; Adam for the rest.

What the optimizer step costs beyond Adam's, from the sources (docs/sources/muon.md holds the excerpts):
- Which parameters: the 2-D weights but the embedding and the output layer, the rest (norms, biases, the lookup
  tables, the head) going to Adam (Megatron-LM d98e8a64dd, optimizer/emerging_optimizers.py
  _is_nonlinear_or_embedding and layer_wise_optimizer.py is_managed_by_layer_wise_optimizer; DeepSpeed's Muon tags
  the same: ndim >= 2 and not the embedding or lm_head). Megatron-Core also leaves Mamba's in_proj to Adam
  (ssm/mamba_mixer.py: use_muon False). Here: every weight of a layer's matmuls (ops.layer_ops) but Mamba's in_proj,
  and of each multi-token-prediction module; the rest of the parameters Adam's.
- Its states: one momentum buffer per matrix, in the gradient's dtype (emerging_optimizers
  orthogonalized_optimizer.py, OrthogonalizedOptimizer.step: `torch.zeros_like(grad)`; fp32 beside fp32 main
  gradients): one state where Adam keeps two (memory.optimizer_state_bytes).
- The iteration (emerging_optimizers muon_utils.py newton_schulz and newton_schulz_step at 0001f6e): on the matrix
  transposed to (small x large), per step A = X X^T, B = b A + c A A, X = a X + B X: 4 s^2 l + 2 s^3 FLOPs
  (newton_schulz_flops); 5 steps (Megatron's --muon-num-ns-steps); in BF16 under fp32_matmul_prec "medium",
  Megatron's default, at the GPU's sustained BF16 matmul rate (rates.py).
- Megatron orthogonalizes Q, K and V apart (split_qkv, on by default), a fused gate-and-up matrix whole.
- Who runs it: with the optimizer sharded (ZeRO 1 and up) each matrix once, whole, on one rank of its shard group:
  Megatron's layer-wise distributed optimizer gives whole parameters to the DP ranks, the costliest first to the
  least loaded (layer_wise_optimizer.py _compute_per_buffer_param_layout: "longest processing time" bin-packing by
  max(m, n) x min(m, n)^2; lpt_makespan), the routed experts' over expert-DP; DeepSpeed likewise divides the
  updates over the data-parallel ranks. Unsharded (ZeRO 0) every rank orthogonalizes every matrix.
- Tensor parallelism (Megatron's default tp_mode "duplicated", muon_utils.py newton_schulz_tp): a TP-split matrix's
  momentum is all-gathered over TP and every TP rank runs the whole matrix's iteration.
- Its memory at the step (working_set_bytes): the largest matrix's fp32 Nesterov update, its fp32 normalized copy
  and the BF16 copy the iteration starts from, 10 bytes an element, beside the states.

Not priced: the uneven shards whole-parameter assignment leaves (Megatron pads them), Muon's own scale and weight
decay (elementwise), and --muon-tp-mode blockwise or distributed.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable

from dpcost.engine.activations import Kernels
from dpcost.engine.memo import per_object_and_key
from dpcost.engine.ops import layer_ops, qkv_widths
from dpcost.engine.rates import rates_for
from dpcost.frozen import frozen
from dpcost.specs import GPUSpec, ModelArchitecture

__all__ = [
    "NS_STEPS",
    "Matrix",
    "layer_matrices",
    "lpt_makespan",
    "managed_parameters",
    "model_matrices",
    "mtp_matrices",
    "newton_schulz_flops",
    "newton_schulz_seconds",
    "orthogonalization_flops",
    "stage_matrices",
    "working_set_bytes",
]

NS_STEPS = 5  # Megatron-LM's --muon-num-ns-steps default (training/arguments.py at d98e8a64dd)
# bytes per element of the matrix being orthogonalized, beside its states (module docstring): the Nesterov update
# and the normalized copy in fp32, the copy the iteration starts from in BF16
WORKING_SET_BYTES = 4 + 4 + 2


@frozen
class Matrix:
    """Weight matrices of one shape that Muon orthogonalizes: `count` of them in the model (or layer)."""

    rows: int  # output features
    cols: int  # input features
    count: int
    split: bool  # split over TP (column- or row-parallel), else whole on every TP rank
    expert: bool  # a routed expert's: split over EP (and expert TP), its optimizer over expert-DP

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def flops(self) -> float:
        return newton_schulz_flops(self.rows, self.cols)


def newton_schulz_flops(rows: float, cols: float, steps: int = NS_STEPS) -> float:
    """One matrix's Newton-Schulz iteration (muon_utils.newton_schulz_step): on X (small x large), X X^T (2 s^2 l),
    B = bA + cAA (2 s^3), X = aX + BX (2 s^2 l), `steps` times."""
    small, large = min(rows, cols), max(rows, cols)
    return steps * (4.0 * small * small * large + 2.0 * small**3)


def newton_schulz_seconds(gpu: GPUSpec, flops: float) -> float:
    """`flops` of the iteration's BF16 matmuls at the GPU's sustained BF16 matmul rate (rates.py)."""
    return flops / (gpu.bf16_dense * rates_for(gpu).gemm) if flops > 0 else 0.0


def layer_matrices(a: ModelArchitecture, moe: bool, mixer: str, mlp: bool, kernels: Kernels) -> tuple[Matrix, ...]:
    """The matrices Muon orthogonalizes in one decoder layer (module docstring): its matmuls' weights, as
    ops.layer_ops runs them with every expert on one rank, Q, K and V apart, but Mamba's in_proj."""
    return _layer_matrices(a, (moe, mixer, mlp, kernels))


@per_object_and_key
def _layer_matrices(a: ModelArchitecture, key: tuple[bool, str, bool, Kernels]) -> tuple[Matrix, ...]:
    moe, mixer, mlp, kernels = key
    attention = a.attention_of(mixer)
    out: list[Matrix] = []
    for op in layer_ops(attention, moe, 1, 1, kernels, mixer=mixer, mlp=mlp):
        if op.kind != "gemm" or (op.module == "mamba" and op.name == "in projection"):
            continue
        _, cols, rows = op.shape  # (m x k) by (k x n): the weight takes k features to n
        split, expert = bool(op.tp_split), op.name.startswith("expert ")
        if op.name == "query, key, value":
            out += [Matrix(width, int(cols), 1, split, False) for width in qkv_widths(attention) if width]
        else:
            out.append(Matrix(int(rows), int(cols), op.repeats, split, expert))
    return tuple(out)


def mtp_matrices(a: ModelArchitecture, kernels: Kernels) -> tuple[Matrix, ...]:
    """One multi-token-prediction module's (params.mtp_layer): a layer of the decoder's last layer's kind and its
    eh_proj (2h -> h, column-parallel)."""
    last = a.layers - 1
    block = layer_matrices(a, a.moe_layer(last), a.mixer(last), a.has_mlp(last), kernels)
    return (*block, Matrix(a.hidden, 2 * a.hidden, 1, True, False))


def model_matrices(a: ModelArchitecture, kernels: Kernels, mtp_layers: int = 0) -> tuple[Matrix, ...]:
    """Every matrix Muon orthogonalizes in the model: its decoder layers', and its `mtp_layers` MTP modules'."""
    return _model_matrices(a, (tuple(range(a.layers)), kernels, mtp_layers))


def stage_matrices(
    a: ModelArchitecture, layers: tuple[int, ...], kernels: Kernels, mtp_layers: int = 0
) -> tuple[Matrix, ...]:
    """The matrices of a pipeline stage: its decoder `layers`', and on the last stage the `mtp_layers` MTP
    modules'."""
    return _model_matrices(a, (layers, kernels, mtp_layers))


@per_object_and_key
def _model_matrices(a: ModelArchitecture, key: tuple[tuple[int, ...], Kernels, int]) -> tuple[Matrix, ...]:
    """The matrices of `layers` and of `mtp_layers` MTP modules, those of one shape counted together."""
    layers, kernels, mtp_layers = key
    counted: dict[tuple[int, int, bool, bool], int] = {}
    found = [m for i in layers for m in layer_matrices(a, a.moe_layer(i), a.mixer(i), a.has_mlp(i), kernels)]
    found += [m for _ in range(mtp_layers) for m in mtp_matrices(a, kernels)]
    for m in found:
        shape = (m.rows, m.cols, m.split, m.expert)
        counted[shape] = counted.get(shape, 0) + m.count
    return tuple(Matrix(rows, cols, n, split, expert) for (rows, cols, split, expert), n in counted.items())


def managed_parameters(matrices: Iterable[Matrix]) -> float:
    """The parameters of `matrices`: what Muon keeps one state for (the rest keep Adam's two)."""
    return float(sum(m.elements * m.count for m in matrices))


@functools.lru_cache(maxsize=4096)
def orthogonalization_flops(
    matrices: tuple[Matrix, ...], ranks: int, expert_ranks: int | None = None, experts_held: float = 1.0
) -> float:
    """The Newton-Schulz FLOPs of the most loaded GPU: the matrices (whole: every TP rank runs a split one's whole
    iteration) shared over `ranks` (the shard group; 1 unsharded), the routed experts' over `expert_ranks` (default
    `ranks`), of which a GPU holds `experts_held` (1 / EP) (lpt_makespan). Kept by its inputs: a plan search asks
    for the same stage at many sizes."""
    dense = [(m.flops, m.count) for m in matrices if not m.expert]
    experts = [(m.flops, max(1, round(m.count * experts_held))) for m in matrices if m.expert]
    return lpt_makespan(dense, ranks) + lpt_makespan(experts, expert_ranks or ranks)


def lpt_makespan(items: Iterable[tuple[float, int]], bins: int) -> float:
    """The most loaded of `bins` bins when items (cost, how many) go in decreasing cost each to the least loaded bin
    (Graham's longest-processing-time rule, as Megatron's layer-wise optimizer assigns its parameters). Bins of
    equal load are kept as one level, so equal items fill them a round at a time."""
    ordered = sorted(((c, n) for c, n in items if c > 0 and n > 0), reverse=True)
    if bins <= 1:
        return sum(c * n for c, n in ordered)
    levels: dict[float, int] = {0.0: bins}  # a load, and how many bins are at it
    lows = [0.0]  # the loads, least first
    for cost, left in ordered:
        while left:
            low = lows[0]
            at = levels[low]
            rounds = left // bins if at == bins else 0  # every bin at one load: whole rounds at once
            moved, rise, placed = (bins, cost * rounds, bins * rounds) if rounds else (min(at, left), cost, 0)
            if moved == at:
                heapq.heappop(lows)
                del levels[low]
            else:
                levels[low] = at - moved
            load = low + rise
            if load in levels:
                levels[load] += moved
            else:
                levels[load] = moved
                heapq.heappush(lows, load)
            left -= placed or moved
    return max(levels)


def working_set_bytes(matrices: Iterable[Matrix]) -> float:
    """What the step allocates beside the states while it orthogonalizes the largest matrix (module docstring)."""
    return WORKING_SET_BYTES * max((m.elements for m in matrices), default=0)
