"""Compute time per op, forward and backward: what one micro-batch and one optimizer step take on one GPU.

Each op has its FLOPs and the bytes it moves through HBM; its time is the larger of FLOPs over the sustained
matmul or attention rate, bytes over the sustained HBM bandwidth, and its kernels' launches (rates.py gives the
rates and their sources). The ops of a layer:
- matmuls: the attention projections (MLA's low-rank ones too), the MLP, the router and the experts, each expert
  with its share of the tokens (T x top-k / experts, balanced). Forward 2MKN; backward the input and the weight
  gradients, 4MKN (Narayanan et al. 2021, section 5.1). Bytes: both operands and the output, once.
- attention: flash attention computes the causal half of the scores, 2 x T x s x heads x (d_qk + d_v) / 2
  forward (FlashAttention-2's FLOP count, Dao 2023, section 4.1), a sliding-window or chunked layer only the keys
  its queries see (attention_keys.causal_keys), an encoder (bidirectional) all of them; its backward recomputes
  the scores, 2.5x the forward's FLOPs (five matmuls against two). Its rate: the kernel's for the sequence, the
  head dim and, in a window, the query block's rows it also computes (rates.py). Without it, the whole
  square, its bytes (Megatron's fused softmax: 8 per score forward, 16 backward; eager PyTorch's ops more,
  _score_square_traffic) at the share of the streaming rate such kernels reach (rates.EAGER_SCORES_HBM).
- memory-bound: norms, residual adds, rotary, the activation (in eager PyTorch a named one's every kernel, as
  measured: activations.EagerActivation), an MoE layer's token permutations to its
  experts and back (_token_permutation), the embedding, the loss, the optimizer step, and a hybrid's Mamba-2
  convolution, chunked scan and gated norm (_mamba_mixer: the scan at the FLOPs per byte of bandwidth its kernels
  are measured at, rates.SSD_FLOPS_PER_HBM_BYTE);
  bytes per token by how the framework runs them (`kernels`: eager PyTorch, fused kernels as Transformer Engine
  and Apex run them, or torch.compile's fused ones), backward about twice the forward's traffic.
- FP8 and NVFP4 casts: an FP8 or NVFP4 matmul's input (forward) and its output's gradient (backward) are cast from
  16 bits each time (FP8_CASTS, NVFP4_CAST).
The model FLOPs (and MFU) stay PaLM's 6N + 12LHQT (compute.py); the ops count what the GPU executes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from dpcost.engine.activations import ACT_BYTES, EAGER_ACTIVATIONS, Kernels, eager_gate_clamp, routed_copies
from dpcost.engine.attention_keys import bidirectional_keys, causal_keys
from dpcost.engine.checkpointing import checkpointed_share, recomputed_modules, takes_policy
from dpcost.engine.compute import mixer_recurrence_flops
from dpcost.engine.rates import (
    EAGER_SCORES_HBM,
    SSD_FLOPS_PER_HBM_BYTE,
    ComputeRates,
    attention_head_factor,
    rates_for,
    shape_factor,
)
from dpcost.frozen import frozen
from dpcost.specs import GPUSpec, LocalAttentionSpec, ModelArchitecture, MoESpec

__all__ = [
    "PARTS",
    "Cast",
    "MicroBatchCompute",
    "Op",
    "OpTimes",
    "Passes",
    "bf16_optimizer_grad_update",
    "bf16_optimizer_step_bytes",
    "bf16_optimizer_step_seconds_on",
    "fp8_cast",
    "has_layer_ops",
    "in_sixteen_bits",
    "layer_ops",
    "main_grad_accumulation",
    "matmul_operands",
    "micro_batch_compute",
    "model_ops",
    "mtp_ops",
    "optimizer_bytes",
    "optimizer_seconds_on",
    "output_head_operands",
    "part_of",
    "qkv_widths",
    "recomputed_by_part",
    "sequence_parallel_copies",
    "sixteen_bit_layer",
    "sixteen_bit_layers",
    "tensor_parallel",
    "times",
]

BF16 = 2
PARTS = ("matmuls", "attention", "memory-bound", "optimizer")


@frozen
class Op:
    name: str
    module: str  # Megatron's module names where one applies (core_attn, mlp, layernorm, moe_act), else the part
    kind: str  # "gemm", "attention" or "memory"
    flops: float  # forward
    bytes: float  # forward
    kernels: int  # forward
    backward_flops: float
    backward_bytes: float
    backward_kernels: int
    repeats: int = 1  # identical ops (the experts)
    shape: tuple[float, float, float] = (0.0, 0.0, 0.0)  # a matmul's (m, k, n): (m x k) by (k x n)
    # how Megatron splits a matmul over TP: "n" column-parallel, "k" row-parallel, "heads" (attention's), "" not at
    # all; a memory op: "" split, "sequence" split only with sequence parallelism, "replicated" never
    tp_split: str = ""
    hbm_share: float = 1.0  # of the sustained streaming rate its kernels move their bytes at (eager attention's less)
    span: float = 0.0  # attention: the causal sequence length doing its work per query (its kernel's rate); 0: seq_len
    head_dim: float = 128.0  # attention: (d_qk + d_v) / 2, for its kernel's rate (rates.attention_head_factor)
    banded: bool = False  # attention in a sliding window: its kernel also computes its query block's rows per query
    # a kernel whose measured rate is this many FLOPs per byte/s of the GPU's peak HBM bandwidth (Mamba-2's scan:
    # rates.SSD_FLOPS_PER_HBM_BYTE); 0: the rate of its kind
    flops_per_hbm_byte: float = 0.0
    # a matmul that stays in 16 bits whatever the compute dtype: the output head (Megatron-Core's output layer is its
    # own ColumnParallelLinear, outside Transformer Engine's FP8, gpt_model.py; MXFP8 only under the opt-in
    # fp8_output_proj, 3f6a2ed8, 2026-05: output_head_operands; torchtitan's float8 configs filter "output", its MX
    # converter by default)
    # and the MoE router (router.py router_gating_linear, in the input's dtype or fp32): at the BF16 peak (times)
    sixteen_bit: bool = False


def _gemm(
    name: str,
    module: str,
    m: float,
    k: float,
    n: float,
    in_bytes: float,
    repeats: int = 1,
    tp_split: str = "",
    sixteen_bit: bool = False,
) -> Op:
    """One matmul of an (m x k) activation by a (k x n) weight: forward 2mkn, backward dgrad + wgrad 4mkn."""
    flops = 2.0 * m * k * n
    moved = in_bytes * (m * k + k * n) + BF16 * m * n
    return Op(
        name, module, "gemm", flops, moved, 1, 2 * flops, 2 * moved, 2, repeats, (m, k, n), tp_split,
        sixteen_bit=sixteen_bit,
    )  # fmt: skip


def sixteen_bit_layer(layer: int, layers: int, bf16_layers: tuple[int, int]) -> bool:
    """Whether decoder layer `layer` (0-based, of `layers`) runs its matmuls in BF16 under an FP8 or NVFP4 recipe: one
    of the first or last `bf16_layers` (Megatron-Core's --first-last-layers-bf16 builds them outside the FP8 context,
    by their global index: fp8_utils.is_first_last_bf16_layer; docs/sources/low-precision-layers.md)."""
    at_start, at_end = bf16_layers
    return layer < at_start or layer >= layers - at_end


def sixteen_bit_layers(indices: Sequence[int], layers: int, bf16_layers: tuple[int, int]) -> list[bool]:
    """sixteen_bit_layer for the decoder layers `indices`: all False, without asking each, where no layer is kept
    in BF16 (every plan of a search)."""
    if not any(bf16_layers):
        return [False] * len(indices)
    return [sixteen_bit_layer(i, layers, bf16_layers) for i in indices]


def in_sixteen_bits(ops: list[Op]) -> list[Op]:
    """A layer's ops with every matmul in 16 bits (Op.sixteen_bit): the layer built outside the FP8 context. Give
    layer_ops BF16 operands and no cast for it."""
    return [replace(op, sixteen_bit=True) if op.kind == "gemm" else op for op in ops]


def _memory(name: str, module: str, fwd_bytes: float, kernels: int, bwd_factor: float = 2.0) -> Op:
    return Op(name, module, "memory", 0.0, fwd_bytes, kernels, 0.0, bwd_factor * fwd_bytes, 2 * kernels)


def _token_permutation(width: int, tokens: float, top_k: int, sort_by_local_expert: bool) -> tuple[list[Op], list[Op]]:
    """The MoE layer's token shuffles around its experts, in Megatron-Core's token dispatchers (token_dispatcher.py;
    moe_utils.permute, unpermute and sort_chunks_by_idxs, as Transformer Engine's fused kernels move them): the
    permutation copies each token once per expert it is routed to (reads T x width, writes top-k x T x width) and
    the unpermutation weighs and sums the copies back (reads top-k x T x width, writes T x width); with the
    all-to-all dispatcher over EP ranks holding several experts, the received tokens are also sorted by local
    expert and unsorted after (sort_chunks_by_idxs: top-k x T x width read and written, each way), which the
    all-gather and flex dispatchers do not run (MoEAllGatherTokenDispatcher and MoEFlexTokenDispatcher permute
    what they receive by expert, or with HybridEP receive it so: token_dispatcher.py at core_r0.15.0 and
    core_r0.16.0 _HybridEPManager.get_permuted_hidden_states_by_experts). The backward
    moves the same bytes in reverse. Returned as the ops before the experts and those after; 16-bit tokens, on each
    rank's own tokens (split over TP only with sequence parallelism)."""
    copies = BF16 * width * tokens * top_k
    once = BF16 * width * tokens

    def shuffle(name: str, fwd_bytes: float) -> Op:  # one kernel each way, the backward moving the same bytes
        return replace(_memory(name, "moe", fwd_bytes, 1, 1.0), tp_split="sequence")

    before = [shuffle("token permutation", once + copies)]
    after = [shuffle("token unpermutation", copies + once)]
    if sort_by_local_expert:
        before.append(shuffle("tokens sorted by local expert", 2 * copies))
        after.insert(0, shuffle("tokens unsorted", 2 * copies))
    return before, after


# Forward bytes per element of the hidden (or FFN) width, and kernels, for each memory-bound op by how it runs:
# eager PyTorch's RMSNorm upcasts to fp32 and makes five passes; fused and compiled kernels read and write once.
_NORM = {"eager": (24.0, 6), "fused": (4.0, 1), "compiled": (4.0, 1)}
_RESIDUAL = {"eager": (6.0, 1), "fused": (2.0, 0), "compiled": (2.0, 0)}  # fused into the norm after it
_ROTARY = {"eager": (12.0, 6), "fused": (4.0, 1), "compiled": (4.0, 1)}
_GATED_ACT = {"eager": (10.0, 2), "fused": (6.0, 1), "compiled": (6.0, 1)}
_ACT = {"eager": (4.0, 1), "fused": (4.0, 1), "compiled": (4.0, 1)}
# Dropout on the hidden state, bytes per element and kernels, forward (the backward reads its gradient and the mask
# and writes the gradient: the same): eager nn.Dropout reads bf16, writes bf16 and a bool mask; fused into Megatron's
# bias-dropout-add (or torch.compile's add) it writes only the mask beside the add.
_DROPOUT = {"eager": (5.0, 1), "fused": (1.0, 0), "compiled": (1.0, 0)}


@frozen
class LossTraffic:
    """The loss's HBM traffic in bytes per logit, and its kernels, forward and backward."""

    forward_bytes: float
    forward_kernels: int
    backward_bytes: float
    backward_kernels: int


# The loss as each implementation runs it over the logits (bytes per logit; docs/sources/cross-entropy.md):
# - upcast, PyTorch's F.cross_entropy on logits.float() (torchtitan, Hugging Face; torchtune's chunks, each alike):
#   log_softmax then nll_loss (LossNLL.cpp), every pass through HBM: the cast (2 + 4), cunn_SoftMaxForward's max, sum
#   of exp and write (4 + 4 + 4 + 4; SoftMax.cu, the kernel for rows above 12,256 fp32 entries); backward
#   nll_loss_backward's zero-filled dense gradient (4), cunn_SoftMaxBackward's sum and write (4 + 4 + 4 + 4) and
#   the cast back (4 + 2): 22 and 26. Its re-reads of a row stay in L2 only where the rows in flight fit (32k
#   vocabularies on an H100 perhaps): not counted.
# - bf16, the same kernels on the bf16 logits: 8 and 10.
# - fused (a kernel that writes the gradient as it reads the logits: Liger's, flash-attn's, compiled): 4 in all, split
#   evenly.
# - vocab-parallel, Megatron-Core's vocab_parallel_cross_entropy (tensor_parallel/cross_entropy.py at core_r0.9.0:
#   27-29, 43, 63-64, 77, 109-112; nanotron's sharded cross-entropy runs the same passes, nn/functional.py:31-115 at
#   0e0a27ea), one full pass each: forward the fp32 cast (2 read + 4 written), max (4), the in-place subtraction (8),
#   exp (8), sum (4) and division (8): 38; backward the in-place multiply by the loss's gradient (8) and autograd's
#   cast of the fp32 gradient to the logits' bf16 (6): 14.
# - vocab-parallel-fused, the same under --cross-entropy-loss-fusion's native implementation (fusions/
#   fused_cross_entropy.py at core_r0.9.0): four compiled functions, each reading its inputs and writing its outputs
#   once: the cast with the max (2 + 4), the subtraction, exp and sum (4 + 4), the division (4 + 4); backward the
#   gradient from the softmax, written in bf16 (4 + 2). Not counted: the copies back of the inputs they update in
#   place, if AOTAutograd makes them (loss.py: the fp32 copy this path is measured to hold more).
# - loss-parallel, torch's loss_parallel (distributed/tensor/parallel/loss.py at 2.14.1) on a vocabulary shard: the
#   cast (2 + 4), amax (4), the subtraction (4 + 4), exp (4 + 4), its sum (4) and the second subtraction (4 + 4):
#   38 in 6 kernels; backward the zero-filled gradient (4), exp (4 + 4), the add (8 + 4), the multiply (4 + 4) and
#   the cast back (4 + 2): 38 in 6 (the index_put of -1 at the targets' entries as one).
# - vocab-parallel-te, Transformer Engine's parallel_cross_entropy (--cross-entropy-fusion-impl te; transformer_engine/
#   pytorch/triton/cross_entropy.py at v2.8: online_softmax_kernel, cross_entropy_kernel, element_mul_kernel): the
#   bf16 logits read for the online softmax (2), read again and overwritten in place by their gradient (2 + 2);
#   backward that gradient scaled in place by the loss's (2 + 2).
LOSS_TRAFFIC = {
    "upcast": LossTraffic(22.0, 3, 26.0, 4),
    "chunked": LossTraffic(22.0, 3, 26.0, 4),
    "chunked-head": LossTraffic(22.0, 3 * 8, 26.0, 4 * 8),  # upcast's, each chunk's own kernels (loss.py)
    "bf16": LossTraffic(8.0, 2, 10.0, 3),
    "fused": LossTraffic(2.0, 3, 2.0, 2),
    "loss-parallel": LossTraffic(38.0, 6, 38.0, 6),
    "vocab-parallel": LossTraffic(38.0, 6, 14.0, 2),
    "vocab-parallel-fused": LossTraffic(22.0, 3, 6.0, 1),
    "vocab-parallel-te": LossTraffic(6.0, 2, 4.0, 1),
}


@frozen
class Cast:
    """Casting one 16-bit matmul operand to the compute dtype: bytes per element and kernels, and whether a norm or
    an activation ahead of the matmul can compute the amax as it writes its output (sparing one read and one
    kernel)."""

    label: str
    bytes: float
    kernels: int
    amax_fusable: bool


# An FP8 matmul's 16-bit operand, cast with a per-tensor scale from its current amax (Transformer Engine's
# Float8CurrentScalingQuantizer::quantize_impl: nvte_compute_amax, nvte_compute_scale_from_amax, nvte_quantize_v2;
# torchao's tensorwise dynamic scaling likewise): read once for its amax, once more to write it in FP8 row-wise and,
# on Hopper, whose FP8 matmuls take only the TN layout, column-wise for the backward's transposed product: bytes per
# element and kernels. Blackwell multiplies FP8 in any layout: no column-wise copy. A norm or an activation in front
# of the matmul computes the amax as it writes its output (Transformer Engine's fused norm and activation kernels):
# that input's cast skips the amax read and its kernel (_casts). Not distinguished: delayed scaling, where the
# norm writes FP8 itself, and MXFP8's block scales, cast in one kernel.
FP8_CASTS = {
    "hopper": Cast("FP8", 2.0 + 2.0 + 1.0 + 1.0, 3, True),
    "blackwell": Cast("FP8", 2.0 + 2.0 + 1.0, 3, True),
}
# NVFP4 (Transformer Engine's NVFP4BlockScaling, the recipe Megatron-Bridge's bf16_with_nvfp4_mixed sets): an E2M1
# value per element and an E4M3 scale per block of 16 (nvfp4.rst), half a byte and a sixteenth.
NVFP4_BYTES = 0.5 + 1.0 / 16
# An activation's or a gradient's NVFP4 cast (NVFP4Quantizer::quantize_impl with RHT, in quantizer.cpp): one read for
# the row-wise amax and the amax after the random Hadamard transform the weight-gradient matmul's operands take
# (nvte_hadamard_transform_amax), one read to write it row-wise (nvte_quantize_v2), and one to write its transpose
# through the transform (nvte_hadamard_transform_cast_fusion_columnwise); three kernels (Transformer Engine 2.8-2.13;
# from 2.14 one kernel writes both copies, a read fewer). The post-transform amax is its own read, so no norm spares
# one (normalization.cpp runs the norm unfused ahead of it). The weights are cast once per optimizer step
# (fp4_param_gather), not here.
NVFP4_CAST = Cast("NVFP4", 2.0 + (2.0 + NVFP4_BYTES) + (2.0 + NVFP4_BYTES), 3, False)


def fp8_cast(arch: str) -> Cast:
    """An FP8 cast on `arch` (FP8_CASTS; Hopper's where the GPU has no FP8 path)."""
    return FP8_CASTS.get(arch, FP8_CASTS["hopper"])


def matmul_operands(arch: str, compute_dtype: str) -> tuple[float, Cast | None]:
    """Bytes per element of a layer matmul's operands, and the cast of a 16-bit one to them (None in 16 bits)."""
    if compute_dtype == "nvfp4":
        return NVFP4_BYTES, NVFP4_CAST
    if compute_dtype == "fp8":
        return 1.0, fp8_cast(arch)
    return BF16, None


def _casts(
    gemm: Op, cast: Cast, cast_input: bool = True, fused_amax: bool = False, cast_gradient: bool = True
) -> list[Op]:
    """The casts an FP8 or NVFP4 matmul adds: its (m x k) input before the forward (unless another matmul's cast of
    the same input serves it, an unfused gate's for its up projection, or a kernel before writes it cast; without the
    amax read where a norm or an activation computed it, `fused_amax`, and the cast allows it), its (m x n) output's
    gradient before the backward (unless the kernel producing that gradient writes it cast). Split over
    TP as the tensors are: a column-parallel matmul's input is the whole hidden state (split only by sequence
    parallelism, where the FP8 all-gather casts the shard) and its output split; a row-parallel one the other way
    round; a replicated one (MLA's down-projections) neither."""
    m, k, n = gemm.shape
    split_in, split_out = {"n": ("sequence", ""), "k": ("", "sequence")}.get(gemm.tp_split, ("replicated",) * 2)
    out = []
    if cast_input:
        spared = fused_amax and cast.amax_fusable
        in_bytes = cast.bytes - BF16 if spared else cast.bytes  # the amax read, done by the kernel before
        in_kernels = cast.kernels - 1 if spared else cast.kernels
        out.append(Op(f"{gemm.name}, {cast.label} cast", gemm.module, "memory", 0.0, in_bytes * m * k, in_kernels,
                      0.0, 0.0, 0, gemm.repeats, tp_split=split_in))  # fmt: skip
    if cast_gradient:
        out.append(Op(f"{gemm.name}, gradient {cast.label} cast", gemm.module, "memory", 0.0, 0.0, 0, 0.0,
                      cast.bytes * m * n, cast.kernels, gemm.repeats, tp_split=split_out))  # fmt: skip
    return out


def layer_ops(
    a: ModelArchitecture,
    moe_layer: bool,
    tokens: int,
    seq_len: int,
    kernels: Kernels,
    gemm_bytes: float = BF16,
    flash: bool = True,
    ep: int = 1,
    cast: Cast | None = None,
    local: LocalAttentionSpec | None = None,
    mixer: str = "attention",
    mlp: bool = True,
    sixteen_bit: bool = False,
    autocast: bool = False,
    dispatcher: str = "alltoall",
    fused_grouped_mlp: bool = False,
    cp: int = 1,
) -> list[Op]:
    """One layer's ops for `tokens` tokens in sequences of `seq_len`, in forward order; with expert parallelism EP,
    one rank's experts/EP local experts, each taking its tokens' share from all EP ranks (Megatron-Core's
    moe_layer.py: num_local_experts = experts // ep; balanced routing), dispatched by `dispatcher` (--moe-token-
    dispatcher-type: _token_permutation). Without flash attention
    the scores are two matmuls over the whole (s x s) square and a softmax that writes, reads and writes the
    scores, and reads them back for the values: 8 bytes per score forward, twice that backward. With dropout
    (a.dropout > 0; GPT-3-style models as Megatron-LM trained them): the attention probabilities' dropout, a kernel
    of its own before flash attention (Megatron's CoreAttention), reads and writes the scores and writes a bool mask,
    5 bytes per score each way (flash attention drops in-kernel); and the hidden state's dropout before each
    residual add (_DROPOUT). With `cast` (FP8 or NVFP4 matmuls: matmul_operands), each matmul but the
    router's and unfused attention's casts its input and its output's gradient (_casts). With `local`, a
    sliding-window or chunked layer, flash attention computes the keys its queries see (causal_keys) at the rate a
    causal kernel keeps at twice that many keys per query (the same work per query block), a window's band also
    its query block's rows (times, rates.attention_query_tile); eager attention still computes the whole square and
    masks it (transformers' eager_attention_forward). A hybrid's layer (has_layer_ops): `mixer` "mamba" runs
    Megatron-Core's Mamba-2 mixer in place of attention (_mamba_mixer), "none" no mixer (Nemotron-H's MLP and MoE
    layers); `mlp` False, no MLP (its Mamba and attention layers), each half with its own norm and residual add
    (megatron/core/ssm/mamba_layer.py, mlp_layer.py). `sixteen_bit`: a layer kept in BF16 under an FP8 or NVFP4
    recipe (sixteen_bit_layer): its matmuls take 16-bit operands uncast, at the BF16 rate (in_sixteen_bits).
    `fused_grouped_mlp` (MXFP8 on Blackwell): the routed experts run Transformer Engine's CuTe-DSL grouped MLP, fc1's
    kernel applying the activation (its clamp too), the probabilities and fc2's input cast, fc2's gradient kernel
    the activation's backward and fc1's output-gradient cast (TE 2.16 ops/fused/forward_grouped_mlp.py,
    backward_grouped_mlp.py): no activation op, and neither cast. With context parallelism `cp` (`tokens` one rank's
    share), flash attention runs as kernels over blocks of the sequence (_attention_half)."""
    if sixteen_bit:
        gemm_bytes, cast = BF16, None
    h, t = a.hidden, float(tokens)
    ops: list[Op] = []
    norm_b, norm_k = _NORM[kernels]
    res_b, res_k = _RESIDUAL[kernels]
    unfused = kernels == "fused" and _megatron_unfused_bias_dropout_add(a)
    if mixer != "none":
        ops.append(_memory("input norm", "layernorm", norm_b * h * t, norm_k))
    if mixer == "mamba":
        # Megatron's sequence-first layout is transposed around the scan; transformers' batch-first one is not
        ops += _mamba_mixer(a, t, gemm_bytes, batched=kernels == "fused" and tokens > seq_len)
        ops.append(_memory("residual add", "residual", res_b * h * t, res_k, 1.0))
    elif mixer != "none":
        ops += _attention_half(a, t, seq_len, kernels, gemm_bytes, flash, local, unfused, autocast, cp)
    if mlp:
        ops += _mlp_half(a, moe_layer, t, kernels, gemm_bytes, ep, unfused, dispatcher, fused_grouped_mlp)
    if sixteen_bit:
        return in_sixteen_bits(ops)
    if cast is None:
        return ops
    with_casts = []
    for before, op in zip([None, *ops], ops, strict=False):
        with_casts.append(op)
        if op.kind == "gemm" and op.module not in ("router", "core_attn"):
            # an unfused up projection reads its gate's input: the gate's cast serves it
            shared = before is not None and before.name == op.name.removesuffix(" up") + " gate"
            # a norm or an activation computes the amax of every matmul input but the attention output's and the
            # routed experts' dispatched tokens
            dispatched = op.name.startswith("expert ") and not op.name.endswith(" down")
            # nor the Mamba output projection's: mamba_ssm's gated norm before it computes none
            unfused_amax = op.module == "attn_out" or op.name == "out projection"
            # the fused grouped MLP's fc1 writes fc2's input cast, and fc2's gradient kernel fc1's output gradient
            in_epilogue = fused_grouped_mlp and op.name == "expert down"
            gradient_in_epilogue = fused_grouped_mlp and op.name == "expert gate and up"
            with_casts += _casts(
                op,
                cast,
                cast_input=not shared and not in_epilogue,
                fused_amax=not unfused_amax and not dispatched,
                cast_gradient=not gradient_in_epilogue,
            )
    return with_casts


def has_layer_ops(a: ModelArchitecture) -> bool:
    """Whether layer_ops has every layer of `a`: attention (global, local), Megatron-Core's Mamba-2 mixer and no
    mixer, each with or without an MLP; not Mamba-1, DeltaNet, lightning attention, short convolutions, Griffin's
    recurrent blocks, RWKV's time mixing, attention and Mamba side by side, nor DeepSeek-V4's compressed attention
    and residual streams, nor Gemma 4's per-layer embeddings and kv-shared layers, nor LongCat-Flash-Lite's n-gram
    embeddings (their dense gradients' traffic), nor Gemma 3n's AltUp, nor MLPs
    that differ in width from layer to layer (Nemotron-NAS), nor experts isolated by modality (ERNIE-4.5-VL) or
    attention experts (JetMoE), nor Zamba2's shared transformer blocks, nor A.X K2's gated norms and query gate, nor
    Inkling's relative logits and short convolutions, nor Ergo's norms over each expert's output, nor Inkling 2's
    attention residuals, nor ZAYA's compressed convolutional attention, nor dots3's latent attention kinds, nor
    ALBERT's shared layers and narrow embedding, nor Dory's nGPT scales."""
    if a.hyper_connected or a.per_layer_input is not None or a.altup is not None or a.ffn_widths:
        return False
    if a.ngram_input is not None:
        return False
    if a.vision_experts or a.attention_experts or a.gated_norms_and_query or a.relative_or_convolved:
        return False
    if (a.moe is not None and a.moe.expert_norms) or a.attention_residual_block is not None or a.convolved_or_scaled:
        return False
    if a.latent_kinds or a.shared_narrow_or_scaled:
        return False
    mamba2 = a.ssm is not None and a.ssm.version == 2
    return all(m in ("attention", "global attention", "none") or (m == "mamba" and mamba2) for m in set(a.mixers))


def ssd_forward_bytes(inner: int, heads: int, groups: int, state: int, chunk: int) -> float:
    """HBM bytes per token of Mamba-2's chunked scan forward, its five Triton kernels' reads and writes (mamba_ssm
    ssd_combined.py; docs/sources/mamba-hybrid-layouts.md section 4's table): x, z and the output 16-bit (10 I),
    B and C (8 G N), dt and its fp32 cumulative sums (26 H), the chunk states in fp32 and their passed 16-bit copy
    (12 I N / Q), and C B^T per chunk in fp32 (8 G Q)."""
    gn = groups * state
    return 10.0 * inner + 8.0 * gn + 26.0 * heads + 12.0 * inner * state / chunk + 8.0 * groups * chunk


def ssd_backward_flops(inner: int, groups: int, state: int, chunk: int) -> float:
    """FLOPs per token of Mamba-2's chunked scan backward, its recomputed forward kernels and its ten backward ones
    (ssd_combined.py _mamba_chunk_scan_combined_bwd; docs/sources/mamba-hybrid-layouts.md section 4):
    10 I N + 6 Q G N + 6 Q I."""
    return 10.0 * inner * state + 6.0 * chunk * groups * state + 6.0 * chunk * inner


def _mamba_mixer(a: ModelArchitecture, t: float, gemm_bytes: float, batched: bool = False) -> list[Op]:
    """Megatron-Core's Mamba-2 mixer after its fused input norm (megatron/core/ssm/mamba_mixer.py, the fused
    mamba_split_conv1d_scan_combined path; docs/sources/mamba-hybrid-layouts.md sections 1-4), every op split over TP
    by heads: the input projection to z, x, B, C and dt (column-parallel); the causal depthwise convolution over x,
    B and C (causal-conv1d: reads and writes its channels once forward, runs again in the backward's recompute,
    whose kernel reads x and the gradient and writes dx); the chunked scan (Dao & Gu 2024) at its kernels' FLOPs
    (compute.mixer_recurrence_flops forward, ssd_backward_flops), run at the rate its kernels are measured at
    (rates.SSD_FLOPS_PER_HBM_BYTE), and no faster than its bytes (ssd_forward_bytes, the backward's in proportion
    to its FLOPs); the gated RMSNorm (mamba_ssm layernorm_gated.py: reads and writes the inner width,
    its backward reads it and the gradient); the output projection (row-parallel). `batched` (a micro-batch of more
    than one sequence): _ssm_training turns the projection's (l, b, d) output into the scan's (b, l, d) and the scan's
    output back with rearrange(...).contiguous(), each a copy (a view where b is 1), and the backward copies their
    gradients back (mamba_mixer.py at d7288711, the commit Megatron-Bridge v0.4.0 pins). Module "mamba": no
    recompute_modules entry re-runs it."""
    m = a.ssm
    assert m is not None and m.heads is not None
    inner, gn, heads, q = m.inner, m.groups * m.state, m.heads, m.chunk
    channels = inner + 2 * gn  # the convolution's: x, B and C
    forward_flops = mixer_recurrence_flops(a, "mamba") * t
    backward_flops = ssd_backward_flops(inner, m.groups, m.state, q) * t
    moved = ssd_forward_bytes(inner, heads, m.groups, m.state, q) * t
    scan = Op("chunked scan", "mamba", "memory", forward_flops, moved, 5, backward_flops,
              moved * backward_flops / forward_flops, 14, flops_per_hbm_byte=SSD_FLOPS_PER_HBM_BYTE)  # fmt: skip
    projected = 2 * inner + 2 * gn + heads  # z, x, B, C and dt
    copied = 2 * BF16 * (projected + inner) * t  # read and written: the projection's output and the scan's
    copies = [Op("layout copies", "mamba", "memory", 0.0, copied, 2, 0.0, copied, 2)] if batched else []
    return [
        _gemm("in projection", "mamba", t, a.hidden, projected, gemm_bytes, tp_split="n"),
        *copies,
        _memory("causal convolution", "mamba", 4.0 * channels * t, 1, 2.5),
        scan,
        _memory("gated norm", "mamba", 4.0 * inner * t, 1, 1.5),
        _gemm("out projection", "mamba", t, inner, a.hidden, gemm_bytes, tp_split="k"),
    ]


def qkv_widths(a: ModelArchitecture) -> tuple[int, int, int]:
    """The query, key and value projections' output widths (attention without MLA): heads x head dim, KV heads x
    head dim, KV heads x value dim (none under Gemma 4's attention_k_eq_v, which has no v_proj)."""
    return a.heads * a.d_head, a.n_kv_heads * a.d_head, 0 if a.values_from_keys else a.n_kv_heads * a.d_value


def _attention_half(
    a: ModelArchitecture,
    t: float,
    seq_len: int,
    kernels: Kernels,
    gemm_bytes: float,
    flash: bool,
    local: LocalAttentionSpec | None,
    unfused: bool,
    autocast: bool = False,
    cp: int = 1,
) -> list[Op]:
    """The attention half of a layer after its input norm, through its residual add (layer_ops); `autocast`: the
    forward runs under torch.autocast (eager attention's softmax then in fp32). Under context parallelism `cp` a rank
    computes its queries against the sequence in blocks of seq_len / cp (Transformer Engine's
    AttnFuncWithCPAndKVP2P: one causal kernel over its own chunks, then one non-causal kernel per peer's keys and
    values, each over half its queries or half the keys; AttnFuncWithCPAndKVAllGather: one kernel per chunk), so its
    kernels run at the rate of a causal span no longer than seq_len / cp."""
    h = a.hidden
    ops: list[Op] = []
    res_b, res_k = _RESIDUAL[kernels]
    norm_b, norm_k = _NORM[kernels]
    if a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank is None:
            # without a query latent the query projection runs where the up-projections do (mla_up_proj)
            ops.append(_gemm("query", "mla_up_proj", t, h, a.heads * qk, gemm_bytes, tp_split="n"))
        else:
            ops.append(_gemm("query down", "qkv", t, h, m.q_lora_rank, gemm_bytes))
            ops.append(_gemm("query up", "mla_up_proj", t, m.q_lora_rank, a.heads * qk, gemm_bytes, tp_split="n"))
        ops.append(_gemm("key-value down", "qkv", t, h, m.kv_lora_rank + m.qk_rope_head_dim, gemm_bytes))
        kv_up = a.heads * (m.qk_nope_head_dim + m.v_head_dim)
        ops.append(_gemm("key-value up", "mla_up_proj", t, m.kv_lora_rank, kv_up, gemm_bytes, tp_split="n"))
        d_qk, d_v, rotary_width = qk, m.v_head_dim, (a.heads + 1) * m.qk_rope_head_dim
        out_in = a.heads * m.v_head_dim
    else:
        q_out, kv_out, v_out = qkv_widths(a)
        ops.append(_gemm("query, key, value", "qkv", t, h, q_out + kv_out + v_out, gemm_bytes, tp_split="n"))
        if a.attention_gate:  # an output gate per query channel (Muse's gate_proj, MiniCPM5-MoE's q_gate_proj)
            ops.append(_gemm("output gate", "qkv", t, h, q_out, gemm_bytes, tp_split="n"))
        d_qk, d_v = a.d_head, a.d_value
        if a.qk_norm != "none":
            # Megatron-Core's q_layernorm and k_layernorm (attention.py get_query_key_value_tensors, before RoPE; the
            # modeling code's q_norm and k_norm likewise): one norm over the queries, one over the keys, outside the
            # core_attn checkpoint and not among the "layernorm" module's (the layer's input and pre-MLP norms)
            ops.append(_memory("query and key norms", "qkv", norm_b * (q_out + kv_out) * t, 2 * norm_k))
        rotary_width = q_out + kv_out if a.rotary else 0
        out_in = a.heads * d_v
    if rotary_width:
        # Megatron-Core's fused RoPE takes no YaRN scale: with one, rope_utils.py runs its unfused PyTorch path
        rot_b, rot_k = _ROTARY["eager" if kernels == "fused" and a.rope_mscale != 1.0 else kernels]
        # Megatron applies RoPE before core attention (attention.py), outside its core_attn checkpoint; MLA inside the
        # function mla_up_proj checkpoints (activations.py, MLA)
        rotary_module = "mla_up_proj" if a.mla is not None else "qkv"
        ops.append(_memory("rotary", rotary_module, rot_b * rotary_width * t, rot_k, 1.0))
    if flash:
        # seq_len / 2 without a window or chunk: the causal half; an encoder's (bidirectional) queries see every key,
        # or those within its window on either side, a non-causal kernel over them
        keys = bidirectional_keys(seq_len, local) if a.bidirectional else causal_keys(seq_len, local)
        attention = 2.0 * t * keys * a.heads * (d_qk + d_v)
        banded = local is not None and local.kind == "sliding" and seq_len > local.size
        span = min(keys if a.bidirectional else 2 * keys, seq_len / cp)
        ops.append(Op("attention", "core_attn", "attention", attention, 0.0, 1, 2.5 * attention, 0.0, 3,
                      span=span, head_dim=(d_qk + d_v) / 2, banded=banded))  # fmt: skip
    else:
        scores = float(a.heads) * seq_len * t
        square = 2.0 * t * seq_len * a.heads * (d_qk + d_v)
        fwd_b, fwd_k, bwd_b, bwd_k = _score_square_traffic(a, kernels, autocast)
        # The bytes of the standard attention EAGER_SCORES_HBM was fitted on stream at that share; what eager ops
        # move beyond them (casts, scaling, copies) are element-wise kernels, at the full streaming rate
        fitted_f, fitted_b = (fwd_b, bwd_b) if kernels != "eager" else _STANDARD_SCORES
        ops.append(
            Op(
                "attention (eager)",
                "core_attn",
                "gemm",
                square,
                fitted_f * scores,
                fwd_k,
                2 * square,
                fitted_b * scores,
                bwd_k,
                tp_split="heads",
                hbm_share=EAGER_SCORES_HBM,
                sixteen_bit=True,  # torch's batched matmuls on the 16-bit scores, outside any FP8 recipe
            )
        )
        if kernels == "eager":  # split over TP, as the heads are
            ops.append(Op("attention's element-wise ops (eager)", "core_attn", "memory", 0.0,
                          (fwd_b - fitted_f) * scores, 0, 0.0, (bwd_b - fitted_b) * scores, 0))  # fmt: skip
        if a.dropout > 0:
            ops.append(_memory("attention dropout", "core_attn", 5.0 * scores, 1, 1.0))
    if a.attention_gate and a.mla is None:  # sigmoid(gate) x context, as a gated activation's product
        gate_b, gate_k = _GATED_ACT[kernels]
        ops.append(_memory("output gating", "core_attn", gate_b * out_in * t, gate_k))
    ops.append(_gemm("output projection", "attn_out", t, out_in, h, gemm_bytes, tp_split="k"))
    drop_b, drop_k = _DROPOUT[kernels]
    if a.dropout > 0:
        ops.append(_memory("dropout", "residual", drop_b * h * t, drop_k, 1.0))
    if unfused:
        ops.append(_unfused_bias_dropout_add(h * t, a.out_bias if a.out_bias is not None else a.linear_bias))
    else:
        ops.append(_memory("residual add", "residual", res_b * h * t, res_k, 1.0))
    return ops


def _activation(
    a: ModelArchitecture, kernels: Kernels, label: str, module: str, elements: float, copies: int = 1
) -> list[Op]:
    """The MLP's activation, with a gated MLP's product: _ACT's or _GATED_ACT's bytes and kernels for how the layer
    runs; in eager PyTorch a named activation as measured (activations.EagerActivation: gelu_new's eight forward
    kernels and 36 bytes an element, where F.gelu runs one and moves 4), a gated MLP's product beside it, and the
    clamps of a clamped one (activations.EagerGateClamp: gpt-oss's five kernels more forward)."""
    act_b, act_k = (_GATED_ACT if a.gated_mlp else _ACT)[kernels]
    if kernels != "eager" or a.activation is None:
        ops = [_memory(f"{label} activation", module, act_b * elements, act_k * copies)]
    else:
        named = EAGER_ACTIVATIONS[a.activation]
        ops = [
            Op(f"{label} activation", module, "memory", 0.0, named.forward_bytes * elements,
               named.forward_kernels * copies, 0.0, named.backward_bytes * elements, named.backward_kernels * copies)
        ]  # fmt: skip
        if a.gated_mlp:  # the product with the up projection's output: what _GATED_ACT counts beyond _ACT
            product_b, product_k = act_b - _ACT[kernels][0], act_k - _ACT[kernels][1]
            ops.append(_memory(f"{label} gated product", module, product_b * elements, product_k * copies))
    clamp = eager_gate_clamp(a, kernels, routed=module == "moe_act")
    if clamp is not None:
        ops.append(
            Op(f"{label} gate clamp", module, "memory", 0.0, clamp.forward_bytes * elements,
               clamp.forward_kernels * copies, 0.0, clamp.backward_bytes * elements, clamp.backward_kernels * copies)
        )  # fmt: skip
    return ops


def _mlp_half(
    a: ModelArchitecture,
    moe_layer: bool,
    t: float,
    kernels: Kernels,
    gemm_bytes: float,
    ep: int,
    unfused: bool,
    dispatcher: str = "alltoall",
    fused_grouped_mlp: bool = False,
) -> list[Op]:
    """The MLP half of a layer, its norm through its residual add (layer_ops)."""
    h = a.hidden
    norm_b, norm_k = _NORM[kernels]
    res_b, res_k = _RESIDUAL[kernels]
    drop_b, drop_k = _DROPOUT[kernels]
    fused_fc1 = kernels == "fused" or a.fused_gate_up  # Megatron's, or the model's own gate_up_proj (_mlp)
    ops = [_memory("post-attention norm", "layernorm", norm_b * h * t, norm_k)]
    if moe_layer and a.moe is not None:
        e = a.moe
        local_experts = max(1, e.experts // ep)
        copies = routed_copies(e, kernels)
        routed = t * copies / local_experts  # tokens per local expert: every rank's tokens routed to these experts
        ops.append(_gemm("router", "router", t, h, e.router_rows(), BF16, sixteen_bit=True))
        if e.latent:  # LatentMoE (params.latent_projections): replicated over TP, as Megatron-Core's "duplicated"
            ops.append(_gemm("latent projection in", "moe", t, h, e.latent, gemm_bytes))
        sort = dispatcher == "alltoall" and ep > 1 and local_experts > 1
        before, after = _token_permutation(e.expert_io(h), t, copies, sort_by_local_expert=sort)
        ops += before
        ops += _mlp("expert", "moe", a, routed, e.ffn, gemm_bytes, local_experts, e.expert_io(h), kernels == "fused")
        # transformers' default experts forward (grouped_mm_experts_forward, integrations/moe.py, 5.25.0) gates every
        # local expert's rows in one call, where DBRX's own loop gates each expert's; Megatron-Core's kernels are
        # counted once an expert
        gates = 1 if kernels == "eager" and not e.expert_loop else local_experts
        if not fused_grouped_mlp:  # else in fc1's kernel, its clamp with it
            ops += _activation(a, kernels, "expert", "moe_act", e.ffn * t * copies, gates)
        if kernels == "fused":
            ops += _megatron_expert_extras(a, e, t, local_experts, clamp=not fused_grouped_mlp)
        ops += after
        if e.latent:
            ops.append(_gemm("latent projection out", "moe", t, e.latent, h, gemm_bytes))
        if e.shared:  # moe_layer.py shared_experts_compute: checkpointed under "shared_experts" (or the whole "moe")
            ops += _mlp("shared expert", "shared_experts", a, t, e.shared_width, gemm_bytes, e.shared, None, fused_fc1)
            ops += _activation(a, kernels, "shared expert", "shared_experts", e.shared_width * t * e.shared)
        if e.output_norm:
            ops.append(_memory("MoE output norm", "layernorm", norm_b * h * t, norm_k))
    else:
        assert a.ffn is not None
        ops += _mlp("MLP", "mlp", a, t, a.ffn, gemm_bytes, fused_fc1=fused_fc1)
        ops += _activation(a, kernels, "MLP", "mlp", a.ffn * t)
    if a.dropout > 0:
        ops.append(_memory("dropout", "residual", drop_b * h * t, drop_k, 1.0))
    if unfused:  # a dense MLP hands its output bias to the add; an MoE layer's experts add their own (bias None)
        ops.append(_unfused_bias_dropout_add(h * t, a.linear_bias and not (moe_layer and a.moe is not None)))
    else:
        ops.append(_memory("residual add", "residual", res_b * h * t, res_k, 1.0))
    return ops


def _megatron_unfused_bias_dropout_add(a: ModelArchitecture) -> bool:
    """Megatron-Core runs its bias-dropout-adds unfused when the linear layers have biases and the experts are
    grouped: TEGroupedMLP asserts that bias_dropout_fusion is off with add_bias_linear (experts.py:782-784 at
    0d8e0714, the commit Megatron-Bridge v0.2.0 pins), a setting of the whole model (gpt-oss)."""
    return a.linear_bias and a.moe is not None


# Attention over the whole score square without flash attention: bytes per score (batch x heads x s x s) and kernels,
# forward then backward. Megatron's unfused path writes the scores, its fused scale-mask-softmax reads and writes
# them, and the matmul with V reads them (8 bytes; the backward twice that); torch.compile's fused softmax alike.
_FUSED_SCORES = (8.0, 5, 16.0, 8)
# transformers' eager_attention_forward (5.25.0), each op a kernel of its own, measured at the aten level
# (tests/reference/hf-configs/resolved/eager-attention-traffic.json): the scores written, scaled, masked, the softmax,
# the matmul with V reading them. Llama's softmax in fp32 is a cast up, the softmax and a cast down (ATen's softmax
# fuses the upcast only for fp16: SoftMax.cpp), 32 bytes a score forward and 36 backward; GPT-2's in the scores'
# 16 bits, 16 and 18. The mask's read is 2 bytes a score over the heads (one (batch, 1, s, s) mask for them all).
_EAGER_SCORES = {True: (32.0, 8, 36.0, 8), False: (16.0, 5, 18.0, 6)}
# FlashAttention-2's benchmark's standard attention (attention_pytorch: the scaled scores written, the mask added, the
# 16-bit softmax, the matmul with V reading them), whose 26 bytes a score rates.EAGER_SCORES_HBM's share was fitted on
_STANDARD_SCORES = (12.0, 14.0)
# Each further 16-bit copy of the square (specs.eager_score_copies) priced as Gemma 2's soft-capping runs it:
# divided, tanh, multiplied
_EAGER_SCORE_COPY = (12.0, 3, 14.0, 3)
# gpt-oss's sinks beyond GPT-2's 16-bit path (and MiMo-V2-Flash's, the same ops): a sink logit per head concatenated to
# the scores, the row's max subtracted, the sink's column sliced off, and their backwards
_EAGER_SINKS = (8.0, 4, 22.0, 6)


def _score_square_traffic(a: ModelArchitecture, kernels: Kernels, autocast: bool) -> tuple[float, int, float, int]:
    """Bytes per score and kernels, forward and backward, of attention over the whole score square: Megatron's
    fused softmax (_FUSED_SCORES), or eager PyTorch's ops as the model's eager attention runs them (_EAGER_SCORES, its
    softmax in fp32 unless the family takes it in 16 bits outside autocast, _EAGER_SCORE_COPY for each copy, and
    _EAGER_SINKS for gpt-oss's concatenated sinks)."""
    if kernels != "eager":
        return _FUSED_SCORES
    fwd_b, fwd_k, bwd_b, bwd_k = _EAGER_SCORES[autocast or not a.eager_softmax_16bit]
    copies = a.eager_score_copies
    copy_fb, copy_fk, copy_bb, copy_bk = _EAGER_SCORE_COPY
    sink_fb, sink_fk, sink_bb, sink_bk = _EAGER_SINKS if a.attention_sinks and a.eager_softmax_16bit else (0, 0, 0, 0)
    mask = BF16 / a.heads
    return (fwd_b + mask + copies * copy_fb + sink_fb, fwd_k + copies * copy_fk + sink_fk,
            bwd_b + copies * copy_bb + sink_bb, bwd_k + copies * copy_bk + sink_bk)  # fmt: skip


def _unfused_bias_dropout_add(elements: float, bias: bool) -> Op:
    """Megatron-Core's _bias_dropout_add_func run eagerly (fused_bias_dropout.py, p = 0), on T x h 16-bit elements:
    with a bias, `x + bias` reads and writes (4 bytes), then `residual + out` reads two and writes one (6), 2
    kernels; backward the adds pass their gradient through and the bias's gradient reduces it over the tokens (reads
    2, 1 kernel). Without a bias (the MoE layer returns none) the add alone: 6 bytes, 1 kernel, nothing backward."""
    width = BF16 * elements
    if bias:
        return Op("residual add (bias, unfused)", "residual", "memory", 0.0, 5 * width, 2, 0.0, width, 1)
    return Op("residual add (unfused)", "residual", "memory", 0.0, 3 * width, 1, 0.0, 0.0, 0)


def _megatron_expert_extras(
    a: ModelArchitecture, e: MoESpec, tokens: float, local_experts: int, clamp: bool = True
) -> list[Op]:
    """What Megatron-Core's grouped experts run besides their fused activation (megatron/core at 0d8e0714 and
    d7288711, the commits Megatron-Bridge v0.2.0 and v0.4.0 pin), on the rank's tokens x top-k expert rows, 16-bit.
    With a clamp (gpt-oss's swiglu_limit), fused_bias_geglu.py weighted_bias_quick_geglu_impl clamps the gate and
    linear halves and concatenates them in eager PyTorch before its compiled kernel: 3 kernels moving 8 elements a
    row of the FFN width (each clamp reads and writes its half, the cat both); backward each clamp's masked gradient
    reads the gradient and its input and writes (3 each), and the halves' gradients are joined (4). With biases on
    the experts (linear_bias), experts.py _apply_bias adds each expert's second bias times its rows' probabilities
    in a Python loop and concatenates: forward b x p writes a row (1), t + it reads two and writes one (3), the cat
    reads and writes (2), 2 kernels an expert and the cat; backward the bias's and the probabilities' gradients
    (grad x p and grad x b, each written and summed: 3 each) and the pieces' gradients joined (2), 4 an expert and
    the cat."""
    rows = tokens * e.active
    ops: list[Op] = []
    if a.activation_clamp is not None and clamp:
        width = BF16 * e.ffn * rows
        ops.append(Op("expert activation clamp", "moe_act", "memory", 0.0, 8 * width, 3, 0.0, 10 * width, 3))
    if a.linear_bias:
        width = BF16 * e.expert_io(a.hidden) * rows
        ops.append(
            Op("expert output bias", "moe", "memory", 0.0, 6 * width, 2 * local_experts + 1, 0.0, 8 * width,
               4 * local_experts + 1)
        )  # fmt: skip
    return ops


def _mlp(
    name: str,
    module: str,
    a: ModelArchitecture,
    tokens: float,
    width: int,
    gemm_bytes: float,
    repeats: int = 1,
    io: int | None = None,
    fused_fc1: bool = False,
) -> list[Op]:
    """An MLP's matmuls: a gated one's gate and up projections as one matmul of twice the width where `fused_fc1`
    (Megatron-Core's linear_fc1 doubles its width for a gated linear unit: transformer/mlp.py, and the grouped
    experts' fc1 alike, moe/experts.py, at core_r0.15.0; a model's own gate_up_proj), else as two; then down."""
    h = io or a.hidden
    if a.gated_mlp and fused_fc1:
        up = [_gemm(f"{name} gate and up", module, tokens, h, 2 * width, gemm_bytes, repeats, "n")]
    else:
        up = [_gemm(f"{name} gate", module, tokens, h, width, gemm_bytes, repeats, "n")] if a.gated_mlp else []
        up.append(_gemm(f"{name} up", module, tokens, h, width, gemm_bytes, repeats, "n"))
    return [*up, _gemm(f"{name} down", module, tokens, width, h, gemm_bytes, repeats, "k")]


def output_head_operands(fp8_output_proj: bool, gemm_bytes: float, cast: Cast | None) -> tuple[float, Cast] | None:
    """The output head's operands for model_ops: the recipe's (matmul_operands' bytes and cast) under Megatron-Core's
    fp8_output_proj (--fp8-output-proj), else None, the 16-bit head."""
    return (gemm_bytes, cast) if fp8_output_proj and cast is not None else None


def model_ops(
    a: ModelArchitecture,
    tokens: int,
    kernels: Kernels,
    loss_impl: str,
    head_operands: tuple[float, Cast] | None = None,
) -> list[Op]:
    """What runs outside the layers: the embedding, the final norm, the output head and the loss. The head stays in
    16 bits (Op.sixteen_bit) but with `head_operands` (Megatron-Core's fp8_output_proj: MXFP8; matmul_operands'
    bytes per element and cast), where it takes those operands and its input and output-gradient casts (_casts; the
    final norm, a module of its own, computes no amax for it)."""
    h, t = a.hidden, float(tokens)
    norm_b, norm_k = _NORM[kernels]
    logits, loss = a.output_vocab * t, LOSS_TRAFFIC[loss_impl]
    if head_operands is None:
        head = [_gemm("output head", "head", t, h, a.output_vocab, BF16, tp_split="n", sixteen_bit=True)]
    else:
        operand_bytes, cast = head_operands
        low = _gemm("output head", "head", t, h, a.output_vocab, operand_bytes, tp_split="n")
        head = [low, *_casts(low, cast)]
    return [
        # the backward scatters into a dense fp32 (vocab x hidden) gradient, zeroed first
        Op("embedding", "embedding", "memory", 0.0, 2 * BF16 * h * t, 1, 0.0, 2 * 4.0 * h * t + 8.0 * a.vocab * h, 2),
        *([_memory("final norm", "layernorm", norm_b * h * t, norm_k)] if a.final_norm else []),
        *head,
        Op(
            "loss",
            "loss",
            "memory",
            0.0,
            logits * loss.forward_bytes,
            loss.forward_kernels,
            0.0,
            logits * loss.backward_bytes,
            loss.backward_kernels,
        ),
    ]


def mtp_ops(
    a: ModelArchitecture,
    tokens: int,
    kernels: Kernels,
    loss_impl: str,
    head_operands: tuple[float, Cast] | None = None,
) -> list[Op]:
    """One multi-token-prediction module's ops beside its transformer layer (Megatron-Core's
    MultiTokenPredictionLayer, multi_token_prediction.py): the shifted tokens' embedding, enorm and hnorm, eh_proj
    (2h -> h, column-parallel), and the final norm, output head (the model's output layer: `head_operands` as
    model_ops) and loss again."""
    h, t = a.hidden, float(tokens)
    norm_b, norm_k = _NORM[kernels]
    embedding, *head_and_loss = model_ops(a, tokens, kernels, loss_impl, head_operands)
    return [
        embedding,
        _memory("MTP enorm", "layernorm", norm_b * h * t, norm_k),
        _memory("MTP hnorm", "layernorm", norm_b * h * t, norm_k),
        _gemm("MTP eh_proj", "mtp", t, 2 * h, h, BF16, tp_split="n"),
        *head_and_loss,
    ]


def main_grad_accumulation(params: float, main_grad_bytes: float) -> Op:
    """The backward's add of each weight's 16-bit gradient into its main gradient where the GEMM did not accumulate
    it (Megatron-Core without gradient-accumulation fusion: distributed_data_parallel.py:355-358 at core_r0.9.0,
    main_grad.add_(grad) in the parameter's hook; nanotron's fp32 accumulator, gradient_accumulator.py:204-223 at
    0e0a27ea), once a micro-batch over `params` (this GPU's): the gradient read, the main gradient read and written.
    Its launches, one a weight, are far shorter than its bytes."""
    return Op("main-gradient accumulation", "grad", "memory", 0.0, 0.0, 0, 0.0, params * (BF16 + 2 * main_grad_bytes),
              0, tp_split="replicated")  # fmt: skip


def bf16_optimizer_grad_update(params: float) -> Op:
    """DeepSpeed's BF16_Optimizer adding each backward's bf16 gradients into its fp32 gradient buffer, once a
    micro-batch over `params` (this GPU's: every parameter, the buffer is whole), a parameter at a time
    (bf16_optimizer.py _update_hp_grad at v0.19.5, `hp_grad.data.add_(lp.grad.data.to(hp_grad.dtype))`): the cast
    reads 2 bytes and writes 4, the add reads 4 and 4 and writes 4."""
    return Op("fp32 gradient accumulation (BF16_Optimizer)", "grad", "memory", 0.0, 0.0, 0, 0.0,
              params * (BF16 + 4 * 4.0), 0, tp_split="replicated")  # fmt: skip


def bf16_optimizer_step_bytes(params: float, wire_bytes: float) -> float:
    """BF16_Optimizer's passes over its whole fp32 gradient buffer each step, `params` of it on this GPU, the
    reduction in `wire_bytes` a value (bf16_optimizer.py step and zero_grad, engine.py allreduce_bucket, at edaa722):
    the global norm reads it (get_global_norm_of_tensors, 4); the reduction casts it to the wire dtype and back where
    that is not fp32 (`tensor.to(communication_data_type)` and `tensor.copy_`, 4 + w and w + 4) and averages it in
    place (`mul_`, w and w); clear_hp_grads zeroes it after the step, and zero_grad again (4 and 4)."""
    cast = 2 * (4.0 + wire_bytes) if wire_bytes != 4.0 else 0.0
    return params * (4.0 + cast + 2 * wire_bytes + 2 * 4.0)


def optimizer_bytes(params: float, grad_bytes: float, master: bool, state_bytes: float) -> float:
    """One step of an Adam-like optimizer over `params` parameters (the GPU's shard): it reads the gradient (and
    its norm for clipping, once more), reads and writes its states and the fp32 master copy, and writes the
    16-bit weights (torch.optim's fused and foreach AdamW, Apex's and Megatron's: one pass)."""
    per_param = 2 * grad_bytes + 2 * state_bytes + (2 * 4.0 + BF16 if master else 2 * BF16)
    return params * per_param


def bf16_optimizer_step_seconds_on(gpu: GPUSpec, params: float, wire_bytes: float) -> float:
    """bf16_optimizer_step_bytes on one GPU, bound by its sustained HBM bandwidth (rates.py), as the step is."""
    return bf16_optimizer_step_bytes(params, wire_bytes) / (gpu.hbm_bandwidth * rates_for(gpu).hbm)


def optimizer_seconds_on(gpu: GPUSpec, params: float, grad_bytes: float, master: bool, state_bytes: float) -> float:
    """That step on one GPU, bound by its sustained HBM bandwidth (rates.py): memory-bound, one pass."""
    return optimizer_bytes(params, grad_bytes, master, state_bytes) / (gpu.hbm_bandwidth * rates_for(gpu).hbm)


def tensor_parallel(ops: Iterable[Op], tp: int, sequence_parallel: bool) -> list[Op]:
    """One TP rank's share of ops (Megatron, Shoeybi et al. 2019 section 3): matmuls and attention split over TP
    (column-parallel, then row-parallel; heads split), as are the activation, rotary and loss that run on the split
    width or vocabulary; norms and residual adds run on every token's full hidden state, split over TP only with
    sequence parallelism (Korthikanti et al. 2022 section 4.2.2). Kernel launches are not split."""
    if tp == 1:
        return list(ops)
    out = []
    for op in ops:
        full_width = op.kind == "memory" and (
            op.module in ("layernorm", "residual", "embedding") or op.tp_split == "sequence"
        )
        # the router, MLA's down-projections, and a memory op on a replicated matmul's tensors
        replicated = (op.kind == "gemm" and not op.tp_split) or op.tp_split == "replicated"
        if replicated or (full_width and not (sequence_parallel and op.module != "embedding")):
            out.append(op)
            continue
        m, k, n = op.shape
        shape = (m, k / tp, n) if op.tp_split == "k" else (m, k, n / tp) if op.tp_split == "n" else op.shape
        out.append(
            replace(
                op,
                flops=op.flops / tp,
                bytes=op.bytes / tp,
                backward_flops=op.backward_flops / tp,
                backward_bytes=op.backward_bytes / tp,
                shape=shape,
            )
        )
    return out


def sequence_parallel_copies(
    hidden: int, tokens: float, micro_batch: int, pairs: int, gather_bytes: float = ACT_BYTES
) -> Op:
    """The copies torch's functional collectives add to DTensor's sequence-parallel calls (torchtitan's TP plans shard
    [b, s, h] along the sequence, Shard(1); NCCL gathers and scatters along dim 0): reduce_scatter_single first cats
    the input's sequence chunks along dim 0, and all_gather_single cats the gathered chunks back along the sequence,
    but for a batch of 1, where a view does (torch 2.14.1 _functional_collectives.py, _utils.py _chunk_or_narrow_cat,
    _maybe_view_chunk_cat, since PR #169404 of December 2025: a copy there too before; DTensor's redistribute calls
    them, placement_types.py). Each reads and writes the whole tensor, on every TP rank (never split). Per column- and
    row-parallel pair: forward the input's gather and the output's reduce-scatter, backward the mirror (the output
    gradient's gather, the input gradient's reduce-scatter). Megatron's sequence-first layout gathers along dim 0 and
    copies nothing. `gather_bytes`: a gathered element's (layout_step.torch_tp_gather_bytes); the reduce-scatters
    move the activations' 16 bits."""
    gathers = micro_batch > 1
    copies = pairs * (1 + gathers)
    moved = pairs * 2 * (ACT_BYTES + gathers * gather_bytes) * hidden * tokens
    return Op("sequence-parallel chunk copies", "tp_copy", "memory", 0.0, moved, copies, 0.0, moved, copies,
              tp_split="replicated")  # fmt: skip


def part_of(op: Op) -> str:
    """The part of PARTS an op's time and FLOPs count under: matmuls, attention or memory-bound."""
    return "matmuls" if op.kind == "gemm" else "attention" if op.kind == "attention" else "memory-bound"


@frozen
class OpTimes:
    """Seconds of one pass over a list of ops, by part, and the FLOPs those ops execute."""

    forward: dict[str, float]
    backward: dict[str, float]
    forward_flops: dict[str, float]
    backward_flops: dict[str, float]

    @property
    def forward_seconds(self) -> float:
        return sum(self.forward.values())

    @property
    def backward_seconds(self) -> float:
        return sum(self.backward.values())


def _seconds(flops: float, moved: float, kernels: int, rate: float, hbm: float, launch: float) -> float:
    compute = flops / rate if flops else 0.0
    return max(compute, moved / hbm, kernels * launch)


def times(
    ops: Iterable[Op],
    rates: ComputeRates,
    peak: float,
    bf16_peak: float,
    hbm_bandwidth: float,
    seq_len: int,
    attention_kernel: str,
    gemm_efficiency: float | None = None,
    shape_key: tuple[str, str] | None = None,
    sixteen_bit_efficiency: float | None = None,
) -> OpTimes:
    """Each op's forward and backward seconds, summed by part: matmuls at `gemm_efficiency` of `peak` (the
    generation's sustained share unless given: --mfu) times their shape's factor for `shape_key`'s (arch, dtype)
    (rates.shape_factor; the backward's two matmuls, dgrad (m x n by n x k) and wgrad (k x m by m x n), each at its
    own), attention at the flash kernel's rate for its causal span (the sequence length, or a window's or chunk's
    equivalent: layer_ops) and head dim (rates.attention_head_factor), memory-bound ops at the sustained HBM
    bandwidth; none faster than its kernels' launches. Under FP8 or NVFP4 (`shape_key`'s dtype) a 16-bit matmul
    (Op.sixteen_bit) runs at `sixteen_bit_efficiency` (--mfu, else the GPU's BF16 share) of the BF16 peak."""
    gemm_rate = peak * (gemm_efficiency or rates.gemm)
    low_precision = shape_key is not None and shape_key[1] != "bf16"
    sixteen_bit_rate = bf16_peak * (sixteen_bit_efficiency or rates.gemm)
    share = rates.attention[attention_kernel]

    def attention_rate(span: float, head_dim: float) -> float:
        head = 1.0 if head_dim == 128 else attention_head_factor(attention_kernel, head_dim)
        return bf16_peak * share * head * span / (span + rates.attention_seq)

    hbm = hbm_bandwidth * rates.hbm
    forward = dict.fromkeys(PARTS[:3], 0.0)
    backward = dict.fromkeys(PARTS[:3], 0.0)
    forward_flops = dict.fromkeys(PARTS[:3], 0.0)
    backward_flops = dict.fromkeys(PARTS[:3], 0.0)
    for op in ops:
        part = part_of(op)
        rate = gemm_rate
        if op.kind == "attention":
            span = op.span or seq_len
            if op.banded:  # the band's keys and its query block's: rates.attention_query_tile
                computed = span / 2 + rates.attention_query_tile
                rate = attention_rate(2 * computed, op.head_dim) * (span / 2) / computed
            else:
                rate = attention_rate(span, op.head_dim)
        if op.flops_per_hbm_byte:
            rate = op.flops_per_hbm_byte * hbm_bandwidth
        backward_rate = rate
        if op.kind == "gemm" and shape_key is not None:
            m, k, n = op.shape
            arch, dtype = shape_key
            base = gemm_rate
            if op.sixteen_bit and low_precision:
                base, dtype = sixteen_bit_rate, "bf16"
            rate = base * shape_factor(arch, dtype, m, n, k)
            dgrad, wgrad = shape_factor(arch, dtype, m, k, n), shape_factor(arch, dtype, k, n, m)
            backward_rate = base * 2 / (1 / dgrad + 1 / wgrad)  # half the FLOPs each
        streams = hbm * op.hbm_share
        forward[part] += op.repeats * _seconds(op.flops, op.bytes, op.kernels, rate, streams, rates.launch)
        backward[part] += op.repeats * _seconds(
            op.backward_flops, op.backward_bytes, op.backward_kernels, backward_rate, streams, rates.launch
        )
        forward_flops[part] += op.repeats * op.flops
        backward_flops[part] += op.repeats * op.backward_flops
    return OpTimes(forward, backward, forward_flops, backward_flops)


@frozen
class Passes:
    """Seconds (or FLOPs) by part: the forward, the backward without its recomputation, and the recomputation."""

    forward: dict[str, float]
    backward: dict[str, float]
    recompute: dict[str, float]

    def total(self, part: str) -> float:
        """The part's forward + backward + recomputation."""
        return self.forward.get(part, 0.0) + self.backward.get(part, 0.0) + self.recompute.get(part, 0.0)


@frozen
class MicroBatchCompute:
    """One micro-batch's compute on one GPU: forward, backward (recomputation included) and where it goes."""

    forward: float
    backward: float
    recompute: float  # seconds of the backward spent re-running forward ops
    seconds: Passes  # by part: every layer, the embedding, the head and the loss
    layer_seconds: Passes  # by part: the layers alone, all of them
    flops: Passes  # by part, as the kernels count them: every layer, the embedding, the head and the loss


def recomputed_by_part(
    forward: dict[str, float], ops: list[Op], per_op: list[float], recompute: str, modules: frozenset[str]
) -> dict[str, float]:
    """What the checkpointing policy runs again of one layer's forward in the backward (checkpointing.py), by part,
    of a quantity given by part (`forward`) and by op (`per_op`, used by selective): seconds or FLOPs. Full, every
    op; torchtitan's per-op SAC, the half of the matmuls it did not save and every memory-bound op; Megatron's
    selective, the forward of the modules it recomputes (with flash attention, core_attn re-runs the attention
    kernel's forward)."""
    out = dict.fromkeys(forward, 0.0)
    if recompute == "full":
        out.update(forward)
    elif recompute == "op":
        out["matmuls"] = 0.5 * forward["matmuls"]
        out["memory-bound"] = forward["memory-bound"]
    elif recompute == "selective":
        held = recomputed_modules(modules)
        for op, value in zip(ops, per_op, strict=True):
            if op.module in held:
                out[part_of(op)] += value
    return out


def micro_batch_compute(
    a: ModelArchitecture,
    moe_layers: list[bool],
    tokens: int,
    seq_len: int,
    kernels: Kernels,
    loss_impl: str,
    rates: ComputeRates,
    peak: float,
    bf16_peak: float,
    hbm_bandwidth: float,
    attention_kernel: str,
    recompute: str = "none",
    modules: frozenset[str] = frozenset({"core_attn"}),
    every: int = 1,
    gemm_efficiency: float | None = None,
    gemm_bytes: float = BF16,
    flash: bool = True,
    shape_key: tuple[str, str] | None = None,
    cast: Cast | None = None,
    sixteen_bit_efficiency: float | None = None,
    bf16_layers: tuple[int, int] = (0, 0),
    autocast: bool = False,
    grad_accumulation: Op | None = None,
    fused_grouped_mlp: bool = False,
    fp8_output_proj: bool = False,
    block: int | None = None,
) -> MicroBatchCompute:
    """Forward and backward seconds of one micro-batch of `tokens` tokens through every layer, the embedding, the
    head and the loss; the recomputation its checkpointing policy adds to the backward. `bf16_layers`: the first and
    last layers whose matmuls stay in BF16 under an FP8 or NVFP4 recipe (sixteen_bit_layer); `grad_accumulation` the
    add of the weight gradients into the main gradients, where the GEMMs do not (main_grad_accumulation);
    `fused_grouped_mlp` the routed experts as Transformer Engine's fused grouped MLP runs them (layer_ops);
    `fp8_output_proj` the output head in the compute dtype (model_ops); `every` and `block` the layers the policy
    applies to (checkpointing.checkpointed_share)."""

    def timed(op_list: list[Op]) -> OpTimes:
        return times(
            op_list, rates, peak, bf16_peak, hbm_bandwidth, seq_len, attention_kernel, gemm_efficiency, shape_key,
            sixteen_bit_efficiency,
        )  # fmt: skip

    def zero() -> dict[str, float]:
        return dict.fromkeys(PARTS[:3], 0.0)

    forward, backward, recomputed = zero(), zero(), zero()
    flops_forward, flops_backward, flops_recomputed = zero(), zero(), zero()
    checkpointed = checkpointed_share(a.layers, every, block)
    # layers of one kind (MoE or not, Gemma 4's global attention or not, a window or not, in BF16 or not) run the
    # same ops
    in_bf16 = sixteen_bit_layers(range(len(moe_layers)), a.layers, bf16_layers)
    kinds = [(moe, a.mixer(i), a.local_span(i), a.has_mlp(i), in_bf16[i]) for i, moe in enumerate(moe_layers)]
    for kind in sorted(set(kinds), key=lambda k: (k[0], k[1], k[2] is not None, k[3], k[4])):  # one local kind
        count, (moe, mixer, local, mlp, sixteen) = kinds.count(kind), kind
        ops = layer_ops(
            a.attention_of(mixer), moe, tokens, seq_len, kernels, gemm_bytes, flash, cast=cast, local=local,
            mixer=mixer, mlp=mlp, sixteen_bit=sixteen, autocast=autocast, fused_grouped_mlp=fused_grouped_mlp,
        )  # fmt: skip
        t = timed(ops)
        per_op = [timed([op]).forward_seconds for op in ops] if recompute == "selective" else [0.0] * len(ops)
        again = recomputed_by_part(t.forward, ops, per_op, recompute, modules)
        flops_per_op = [op.flops * op.repeats for op in ops]
        again_flops = recomputed_by_part(t.forward_flops, ops, flops_per_op, recompute, modules)
        # the layers of this kind the policy takes: a share of them, or under --recompute-block the first N's
        rerun = count * checkpointed
        if block is not None:
            rerun = sum(1 for i, k in enumerate(kinds) if k == kind and takes_policy(i, every, block))
        for part in forward:
            forward[part] += count * t.forward[part]
            backward[part] += count * t.backward[part]
            recomputed[part] += rerun * again[part]
            flops_forward[part] += count * t.forward_flops[part]
            flops_backward[part] += count * t.backward_flops[part]
            flops_recomputed[part] += rerun * again_flops[part]
    layers = Passes(dict(forward), dict(backward), recomputed)
    head = output_head_operands(fp8_output_proj, gemm_bytes, cast)
    rest = timed(model_ops(a, tokens, kernels, loss_impl, head) + ([grad_accumulation] if grad_accumulation else []))
    for part in forward:
        forward[part] += rest.forward[part]
        backward[part] += rest.backward[part]
        flops_forward[part] += rest.forward_flops[part]
        flops_backward[part] += rest.backward_flops[part]
    again_seconds = sum(recomputed.values())
    return MicroBatchCompute(
        sum(forward.values()),
        sum(backward.values()) + again_seconds,
        again_seconds,
        Passes(forward, backward, recomputed),
        layers,
        Passes(flops_forward, flops_backward, flops_recomputed),
    )
