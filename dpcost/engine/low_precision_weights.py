"""A linear layer's weight in FP8 or NVFP4: the bytes Transformer Engine holds it in while training, and the bytes
Megatron-LM's parameter gathers move.

Held (held_weight_bytes). While training, Transformer Engine keeps a low-precision layer's weight quantized for both
of its uses: row-wise for the forward's product and column-wise for the backward's data gradient (its weight
quantizer takes both usages when grad is enabled: module/base.py at d0067d0da). It holds them
- as the parameter itself under Megatron's --fp8-param-gather or --fp4-param-gather (quantized_model_init); or
- with bf16 parameters, as a copy each module caches from one micro-batch to the next and refreshes at the first
  (module/linear.py, layernorm_linear.py, layernorm_mlp.py, grouped_linear.py: `_fp8_workspaces`, kept wherever
  the caller passes is_first_microbatch). Megatron-Core's TE layers always pass it but under the config's
  disable_parameter_transpose_cache, which Megatron-LM gives no flag (extensions/transformer_engine.py;
  training/arguments.py, at d98e8a64dd). Engines that quantize each forward afresh (torchao's float8) keep none.

Bytes a weight, both usages:
- per-tensor scaling (delayed, tensorwise): the FP8 byte, and on Hopper its transpose as well. Hopper's FP8
  matmuls take only the TN layout; Blackwell's (compute capability 10.x) take any, and read the one copy
  (tensor/storage/float8_tensor_storage.py update_usage; utils.py is_non_tn_fp8_gemm_supported). The transpose of
  a gathered parameter is made right after its gather (tensor/utils.py post_all_gather_processing).
- blockwise (Float8BlockScaling): row- and column-wise copies, each with an fp32 scale per 128 x 128 block of the
  weight (recipe w_block_scaling_dim 2).
- MXFP8: row- and column-wise copies, each with an E8M0 scale per 32 values.
- NVFP4: row- and column-wise, half a byte a value and an E4M3 scale per 16 (ops.NVFP4_BYTES).

Megatron-FSDP's buffers hold the row-wise bytes alone, but for MXFP8, whose column-wise copy gets a buffer of its
own (megatron_fsdp/mixed_precision.py fp8_need_transpose_data); a per-tensor transpose is made on the gathered unit
and dropped after (fp8_discard_transpose_cache), a transient not counted here.

Gathered (gathered_weight_bytes): the distributed optimizer's buffer holds the row-wise values (QUANTIZED_WEIGHTS),
but for MXFP8 since Megatron-Core 0.13 (d559555a54): a bf16 view of the gradient buffer, two bytes gathered and
quantized after (param_and_grad_buffer.py, at d98e8a64dd).
"""

from __future__ import annotations

from dpcost.engine.ops import NVFP4_BYTES
from dpcost.frozen import frozen

__all__ = [
    "FP8_BLOCK_SCALE_BYTES",
    "MXFP8_BYTES",
    "QUANTIZED_WEIGHTS",
    "QuantizedWeights",
    "gathered_weight_bytes",
    "held_weight_bytes",
    "saved_input_bytes",
]

# One usage of a weight under MXFP8 (an E8M0 scale per 32 values) and under blockwise FP8 (an fp32 scale per
# 128 x 128 block): bytes per value.
MXFP8_BYTES = 1.0 + 1.0 / 32
FP8_BLOCK_SCALE_BYTES = 1.0 + 4.0 / (128 * 128)


@frozen
class QuantizedWeights:
    """A low-precision format Megatron stores and gathers the linear weights in (--gather-dtype): the bytes of a
    weight its distributed optimizer's all-gather moves, the fewest bytes any recipe holds one in on any GPU (the
    plan search's floor: held_weight_bytes), its name and Megatron's flag for it."""

    gathered: float
    least_held: float
    title: str
    flag: str


# --gather-dtype fp8 (--fp8-param-gather): a byte gathered, held in one on Blackwell under per-tensor scaling.
# nvfp4 (--fp4-param-gather): the packed row-wise half byte gathered (param_and_grad_buffer.py nvfp4_packed_numel),
# every rank setting the scales from an amax all-reduced across DP first (layout_estimate.nvfp4_amax_syncs).
QUANTIZED_WEIGHTS = {
    "fp8": QuantizedWeights(1.0, 1.0, "fp8", "--fp8-param-gather"),
    "nvfp4": QuantizedWeights(0.5, 2 * NVFP4_BYTES, "NVFP4", "--fp4-param-gather"),
}


def held_weight_bytes(fmt: str, recipe: str, arch: str, megatron_fsdp: bool = False) -> float:
    """Bytes Transformer Engine holds one linear weight in, in format `fmt` (fp8 or nvfp4) under FP8 `recipe`
    (delayed, tensorwise, blockwise or mxfp8) on a GPU of `arch`: both usages; in Megatron-FSDP's buffers
    (`megatron_fsdp`) the row-wise alone but for MXFP8 (module docstring)."""
    if fmt == "nvfp4":
        return 2 * NVFP4_BYTES
    if recipe == "mxfp8":
        return 2 * MXFP8_BYTES
    one_usage = FP8_BLOCK_SCALE_BYTES if recipe == "blockwise" else 1.0
    if megatron_fsdp or (recipe != "blockwise" and arch == "blackwell"):
        return one_usage
    return 2 * one_usage


def saved_input_bytes(fmt: str, recipe: str, gathered_by_norm_layer: bool = False) -> float:
    """Bytes per element of a low-precision matmul's input that Transformer Engine saves for the backward's weight
    gradient, one usage (module/linear.py, layernorm_linear.py, grouped_linear.py at d0067d0da): the FP8 byte under
    per-tensor scaling (Hopper's transpose or the row-wise shard a sequence-parallel layer re-gathers), with an E8M0
    scale per 32 values (MXFP8) or an fp32 scale per 1 x 128 block (blockwise): 1 + 1/32 either way; NVFP4's half
    byte and scale per 16, both usages where a norm-fused layer's sequence-parallel output is gathered for the
    backward (`gathered_by_norm_layer`: layernorm_linear.py drops neither for NVFP4)."""
    if fmt == "nvfp4":
        return 2 * NVFP4_BYTES if gathered_by_norm_layer else NVFP4_BYTES
    return MXFP8_BYTES if recipe in ("mxfp8", "blockwise") else 1.0


def gathered_weight_bytes(fmt: str, recipe: str, distributed_optimizer: bool) -> float:
    """Bytes of one linear weight a parameter all-gather moves in format `fmt`: the format's (QUANTIZED_WEIGHTS),
    but bf16's two for MXFP8 under Megatron's `distributed_optimizer` (module docstring)."""
    if fmt == "fp8" and recipe == "mxfp8" and distributed_optimizer:
        return 2.0
    return QUANTIZED_WEIGHTS[fmt].gathered
