"""Muon: each hidden weight matrix's momentum orthogonalized by Newton-Schulz iterations; Adam for the rest.

What the optimizer step costs beyond Adam's, from the sources (docs/sources/muon.md holds the excerpts):
- Which parameters: the 2-D weights but the word embedding and the output layer, the rest (norms, biases, the
  word embedding, the head) going to Adam (Megatron-LM d98e8a64dd, optimizer/emerging_optimizers.py
  _is_nonlinear_or_embedding and layer_wise_optimizer.py is_managed_by_layer_wise_optimizer; language_module.py marks
  only word_embeddings and output_layer, so a learned position table is Muon's; DeepSpeed's Muon tags alike: ndim >= 2
  and not the embedding or lm_head). Megatron-Core also leaves Mamba's in_proj to Adam (ssm/mamba_mixer.py: use_muon
  False). Here: every weight of a layer's matmuls (ops.layer_ops) but Mamba's in_proj, of each multi-token-prediction
  module, and a learned position table; the rest of the parameters Adam's. Layers whose matmuls ops.layer_ops does
  not list (ops.has_layer_ops) are refused (prepare.py).
- Its states: one momentum buffer per matrix, in the gradient's dtype (emerging_optimizers
  orthogonalized_optimizer.py, OrthogonalizedOptimizer.step: `torch.zeros_like(grad)`; fp32 beside Megatron's fp32
  main gradients; DeepSpeed's in BF16, its gradient-accumulation and communication dtype: memory.Recipe): one state
  where Adam keeps two (memory.optimizer_state_bytes).
- The iteration (emerging_optimizers muon_utils.py newton_schulz and newton_schulz_step, read at 0001f6e; the version
  Megatron calls passes its TP mode and SYRK switch, the steps' matmuls the same): on the matrix
  transposed to (small x large), per step A = X X^T, B = b A + c A A, X = a X + B X: 4 s^2 l + 2 s^3 FLOPs
  (newton_schulz_flops); 5 steps (Megatron's --muon-num-ns-steps); in BF16 under fp32_matmul_prec "medium",
  Megatron's default, at the GPU's sustained BF16 matmul rate (rates.py).
- Megatron orthogonalizes Q, K and V apart (split_qkv, on by default) but keeps them one parameter, a fused
  gate-and-up matrix whole (Matrix.parts).
- Who runs it: with the optimizer sharded (ZeRO 1 and up) each parameter once, whole, on one rank of its shard
  group: Megatron's layer-wise distributed optimizer gives whole parameters to the DP ranks, the costliest first to
  the least loaded (layer_wise_optimizer.py _compute_per_buffer_param_layout: "longest processing time" bin-packing
  by max(m, n) x min(m, n)^2; lpt_makespan), the routed experts' over expert-DP; DeepSpeed's ZeRO optimizers
  orthogonalize the parameters of their own partitions. Unsharded (ZeRO 0) every rank orthogonalizes every matrix.
- The buffers that layout pads (layer_wise_padding): each bucket's DP shards hold whole parameters, placed costliest
  first (max x min^2 of the shape on the GPU) on the shard with the least cost so far among those under 1.3 x the
  average size, else on the emptiest, and every shard is padded to the fullest (_emit_bucket), so a bucket is at
  least DP x its largest parameter ("Padding floor"); the gradient and parameter buffers hold the padding. Under
  --overlap-grad-reduce the first pipeline stage's first model chunk is cut into buckets of Megatron's bucket_size,
  each padded alone (training.py gives every other chunk, and every other stage, one bucket); a buffer fills in the
  order Megatron-Core registers the parameters, reversed (buffer_order).
- Tensor parallelism (Megatron's default tp_mode "duplicated", muon_utils.py newton_schulz_tp): a TP-split matrix's
  momentum is all-gathered over TP and every TP rank runs the whole matrix's iteration.
- Its memory at the step (working_set_bytes): while the largest matrix is orthogonalized, its fp32 normalized copy
  and the BF16 copy the iteration starts from, then the fp32 result scaled twice (emerging_optimizers.py
  scaled_orthogonalize_fn: `orth_grad * scale_factor * extra_scale_factor`, three fp32 tensors at once), 12 bytes an
  element (Megatron's default runs without Nesterov momentum); a TP-split one is first all-gathered in fp32, its
  shards and their concatenation live through the iteration, 14.

Not priced: the per-bucket element cap and per-chunk restart of Megatron's assignment in the Newton-Schulz time (an
even spread is taken there), Muon's own weight decay (elementwise), --muon-tp-mode blockwise or distributed, and
DeepSpeed's Gram Newton-Schulz variant (priced as this iteration).
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable, Sequence

from dpcost.engine.activations import Kernels
from dpcost.engine.memo import per_object_and_key
from dpcost.engine.ops import layer_ops, qkv_widths
from dpcost.engine.rates import rates_for
from dpcost.frozen import frozen
from dpcost.specs import GPUSpec, ModelArchitecture

__all__ = [
    "NS_STEPS",
    "PADDING_FLOOR",
    "Matrix",
    "buffer_order",
    "layer_matrices",
    "layer_wise_padding",
    "lpt_makespan",
    "managed_parameters",
    "model_matrices",
    "model_order",
    "mtp_matrices",
    "newton_schulz_flops",
    "newton_schulz_seconds",
    "orthogonalization_flops",
    "packing_cost",
    "position_matrices",
    "stage_matrices",
    "working_set_bytes",
]

NS_STEPS = 5  # Megatron-LM's --muon-num-ns-steps default (training/arguments.py at d98e8a64dd)
# bytes per element of the matrix being orthogonalized, beside its states (module docstring): the iteration's result
# scaled twice, three fp32 tensors; a TP-split matrix's gathered shards and their concatenation, then its fp32
# normalized copy and the BF16 one the iteration starts from
WORKING_SET_BYTES = 3 * 4
GATHERED_WORKING_SET_BYTES = 4 + 4 + 4 + 2
# layer_wise_optimizer.py _emit_bucket: _NUMEL_EPSILON, how far over the average size a shard may grow by cost
PACKING_SLACK = 0.3
# _compute_per_buffer_param_layout's PADDING_FLOOR: a bucket holds at least 0.9 x ranks x its largest parameter
PADDING_FLOOR = 0.9


@frozen
class Matrix:
    """Weight matrices of one shape that Muon orthogonalizes: `count` of them in the model (or layer)."""

    rows: int  # output features
    cols: int  # input features
    count: int
    split: bool  # split over TP (column- or row-parallel), else whole on every TP rank
    expert: bool  # a routed expert's: split over EP (and expert TP), its optimizer over expert-DP
    parts: tuple[int, ...] = ()  # the row blocks orthogonalized apart (Megatron's Q, K and V); () whole
    rows_split: bool = True  # a split one's output features split (column-parallel), else its input's

    def on_gpu(self, tp: int) -> tuple[float, float]:
        """Its shape on one of `tp` ranks."""
        if not self.split or tp <= 1:
            return float(self.rows), float(self.cols)
        return (self.rows / tp, float(self.cols)) if self.rows_split else (float(self.rows), self.cols / tp)

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def flops(self) -> float:
        return sum(newton_schulz_flops(rows, self.cols) for rows in self.parts or (self.rows,))


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
    ops.layer_ops runs them with every expert on one rank, Q, K and V apart, but Mamba's in_proj; in the order
    Megatron-Core registers them, the attention's output projection first (Attention.__init__ builds linear_proj
    before SelfAttention's linear_qkv and MLA's projections: attention.py, multi_latent_attention.py at
    d98e8a64dd), which orders the buffer layer_wise_padding packs."""
    return _layer_matrices(a, (moe, mixer, mlp, kernels))


@per_object_and_key
def _layer_matrices(a: ModelArchitecture, key: tuple[bool, str, bool, Kernels]) -> tuple[Matrix, ...]:
    moe, mixer, mlp, kernels = key
    attention = a.attention_of(mixer)
    out: list[Matrix] = []
    ops = layer_ops(attention, moe, 1, 1, kernels, mixer=mixer, mlp=mlp)
    for op in sorted(ops, key=lambda op: op.module != "attn_out"):  # stable: the rest in the ops' order
        if op.kind != "gemm" or (op.module == "mamba" and op.name == "in projection"):
            continue
        _, cols, rows = op.shape  # (m x k) by (k x n): the weight takes k features to n
        split, expert, rows_split = bool(op.tp_split), op.name.startswith("expert "), op.tp_split != "k"
        if op.name == "query, key, value":
            parts = tuple(width for width in qkv_widths(attention) if width)
            out.append(Matrix(int(rows), int(cols), 1, split, False, parts, rows_split))
        else:
            out.append(Matrix(int(rows), int(cols), op.repeats, split, expert, (), rows_split))
    return tuple(out)


def mtp_matrices(a: ModelArchitecture, kernels: Kernels) -> tuple[Matrix, ...]:
    """One multi-token-prediction module's (params.mtp_layer): its eh_proj (2h -> h, column-parallel), then a layer
    of the decoder's last layer's kind, as MultiTokenPredictionLayer registers them (multi_token_prediction.py)."""
    last = a.layers - 1
    block = layer_matrices(a, a.moe_layer(last), a.mixer(last), a.has_mlp(last), kernels)
    return (Matrix(a.hidden, 2 * a.hidden, 1, True, False), *block)


def position_matrices(a: ModelArchitecture) -> tuple[Matrix, ...]:
    """A learned position table (positions x hidden, whole on every TP rank), which Megatron does not mark as an
    embedding (language_module.py marks word_embeddings and output_layer): Muon's."""
    return (Matrix(a.learned_positions, a.hidden, 1, False, False),) if a.learned_positions else ()


def model_matrices(a: ModelArchitecture, kernels: Kernels, mtp_layers: int = 0) -> tuple[Matrix, ...]:
    """Every matrix Muon orthogonalizes in the model: its decoder layers', its `mtp_layers` MTP modules' and a
    learned position table."""
    return _model_matrices(a, (tuple(range(a.layers)), kernels, mtp_layers, True))


def model_order(a: ModelArchitecture, kernels: Kernels) -> tuple[Matrix, ...]:
    """The matrices of model_matrices (without MTP) one by one in forward order, as a model chunk holds them: a
    learned position table (in the embedding), then each decoder layer's."""
    layers = (layer_matrices(a, a.moe_layer(i), a.mixer(i), a.has_mlp(i), kernels) for i in range(a.layers))
    return (*position_matrices(a), *(m for layer in layers for m in layer))


def stage_matrices(
    a: ModelArchitecture, layers: tuple[int, ...], kernels: Kernels, mtp_layers: int = 0, first: bool = False
) -> tuple[Matrix, ...]:
    """The matrices of a pipeline stage: its decoder `layers`', on the last stage the `mtp_layers` MTP modules', on
    the `first` a learned position table."""
    return _model_matrices(a, (layers, kernels, mtp_layers, first))


@per_object_and_key
def _model_matrices(a: ModelArchitecture, key: tuple[tuple[int, ...], Kernels, int, bool]) -> tuple[Matrix, ...]:
    """The matrices of `layers`, of `mtp_layers` MTP modules and (`positions`) a learned position table, those of
    one shape counted together."""
    layers, kernels, mtp_layers, positions = key
    counted: dict[tuple[int, int, bool, bool, tuple[int, ...], bool], int] = {}
    found = [m for i in layers for m in layer_matrices(a, a.moe_layer(i), a.mixer(i), a.has_mlp(i), kernels)]
    found += [m for _ in range(mtp_layers) for m in mtp_matrices(a, kernels)]
    found += position_matrices(a) if positions else ()
    for m in found:
        shape = (m.rows, m.cols, m.split, m.expert, m.parts, m.rows_split)
        counted[shape] = counted.get(shape, 0) + m.count
    return tuple(
        Matrix(rows, cols, n, split, expert, parts, rows_split)
        for (rows, cols, split, expert, parts, rows_split), n in counted.items()
    )


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


def working_set_bytes(matrices: Iterable[Matrix], tp: int = 1) -> float:
    """What the step allocates beside the states while it orthogonalizes its largest matrix (module docstring): 12
    bytes an element, 14 for a matrix split over `tp` > 1 ranks, gathered whole first."""
    return max(
        (m.elements * (GATHERED_WORKING_SET_BYTES if m.split and tp > 1 else WORKING_SET_BYTES) for m in matrices),
        default=0.0,
    )


def layer_wise_padding(params: Sequence[tuple[float, float, int]], ranks: int, bucket: float | None = None) -> float:
    """The elements Megatron's layer-wise layout pads one model chunk's buffer with (layer_wise_optimizer.py
    _compute_per_buffer_param_layout, module docstring): its parameters, (cost: packing_cost of the shape on the GPU,
    elements on the GPU, how many in a row) in the order the buffer fills, backprop's (buffer_order).

    Without `bucket` (Megatron's bucket_size in elements: --overlap-grad-reduce on the first pipeline stage's first
    model chunk) one bucket of all of them; with it, a bucket closes once it holds max(bucket, 0.9 x ranks x its
    largest parameter) elements and the next parameter would not fit the padding of its shards, filled least first
    (_absorbs, _place). Each bucket is packed alone (_emit_bucket): costliest first, each on the shard of least cost
    so far (costs kept across the buckets, sizes not) among those it leaves under 1.3 x the bucket's average size,
    else on the emptiest; every shard as full as the fullest. Shards are kept in heaps, ties to the lowest, as
    Megatron's min() over them takes the first."""
    runs = [(c, s, n) for c, s, n in params if s > 0 and n > 0]
    if ranks <= 1 or not runs:
        return 0.0
    loads = [0.0] * ranks  # each shard's packing cost, kept from one bucket to the next
    padding = 0.0
    held: list[tuple[float, float, int]] = []  # the open bucket's runs: (cost, elements, how many)
    elements = largest = fullest = 0.0
    placed = [(0.0, r) for r in range(ranks)]  # the open bucket's shards as _place fills them: (elements, shard)
    for cost, size, n in runs:
        left = n
        while left:
            full = bucket is not None and held and elements >= max(bucket, int(ranks * largest * PADDING_FLOOR))
            if full and placed[0][0] + size > fullest:  # full, and it would grow the bucket: the bucket closes
                padding += _bucket_padding(held, ranks, loads)
                held, elements, largest, fullest = [], 0.0, 0.0, 0.0
                placed = [(0.0, r) for r in range(ranks)]
            low, r = placed[0]
            heapq.heapreplace(placed, (low + size, r))
            fullest = max(fullest, low + size)
            if held and held[-1][:2] == (cost, size):
                held[-1] = (cost, size, held[-1][2] + 1)
            else:
                held.append((cost, size, 1))
            elements += size
            largest = max(largest, size)
            left -= 1
    return padding + _bucket_padding(held, ranks, loads)


def _bucket_padding(held: list[tuple[float, float, int]], ranks: int, loads: list[float]) -> float:
    """One bucket packed as _emit_bucket packs it (layer_wise_padding), `loads` carried on: the elements its shards
    are padded with. Equal parameters come in a row once sorted; within a row a shard's size only grows, so one
    over the cap stays over it, and once none is under it every later one goes to the emptiest."""
    total = sum(size * n for _, size, n in held)
    cap = total / ranks * (1 + PACKING_SLACK)
    sizes = [0.0] * ranks
    rows: list[tuple[float, float, int]] = []  # (cost, size, how many), costliest first; stable as sorted() is
    for cost, size, n in sorted(held, key=lambda p: -p[0]):
        if rows and rows[-1][:2] == (cost, size):
            rows[-1] = (cost, size, rows[-1][2] + n)
        else:
            rows.append((cost, size, n))
    for cost, size, n in rows:
        under = [(loads[r], r) for r in range(ranks) if sizes[r] + size <= cap]  # by cost so far, then shard
        heapq.heapify(under)
        emptiest: list[tuple[float, int]] | None = None  # built once none is under the cap
        for _ in range(n):
            if under:
                _, r = heapq.heappop(under)
            else:
                if emptiest is None:
                    emptiest = [(sizes[s], s) for s in range(ranks)]
                    heapq.heapify(emptiest)
                _, r = heapq.heappop(emptiest)
            sizes[r] += size
            loads[r] += cost
            if emptiest is not None:
                heapq.heappush(emptiest, (sizes[r], r))
            elif sizes[r] + size <= cap:
                heapq.heappush(under, (loads[r], r))
    return ranks * max(sizes) - total


def buffer_order(
    matrices: Iterable[Matrix], tp: int, ep: int = 1, sequential: bool = False
) -> list[tuple[float, float, int]]:
    """`matrices`, listed in the order Megatron-Core registers them, as layer_wise_padding packs them: in the
    buffer's order (backprop's, the parameters reversed: param_and_grad_buffer.py fills a buffer from the last), each
    (packing_cost of its shape on one of `tp` ranks, its elements there, how many in a row: a routed expert's count
    over `ep` ranks). TEGroupedMLP registers every expert's fc1, then every fc2 (experts.py); SequentialMLP
    (`sequential`: --no-grouped-gemm) one expert's fc1 and fc2 after the other."""
    forward: list[tuple[float, float, int]] = []
    experts: list[tuple[float, float, int]] = []  # a layer's routed experts' matrices, one expert's each

    def flush() -> None:
        if sequential and experts:
            forward.extend(one for _ in range(experts[0][2]) for one in ((c, s, 1) for c, s, _ in experts))
        else:
            forward.extend(experts)
        experts.clear()

    for m in matrices:
        rows, cols = m.on_gpu(tp)
        entry = (packing_cost(rows, cols), rows * cols, max(1, round(m.count / ep)) if m.expert else m.count)
        if not m.expert or (experts and experts[0][2] != entry[2]):
            flush()
        (experts if m.expert else forward).append(entry)
    flush()
    return forward[::-1]


def packing_cost(rows: float, cols: float) -> float:
    """Megatron's estimate of a parameter's Newton-Schulz cost, which orders its packing: max x min^2 of its shape
    (layer_wise_optimizer.py _ns_compute_cost)."""
    return max(rows, cols) * min(rows, cols) ** 2
