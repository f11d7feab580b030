"""What a plan can be told, once: grouped, validated options that the engine reads and the CLI takes its flags from.

Sections follow what the setting is about (torchtitan's JobConfig does the same): the plan (DP size, ZeRO stage,
recomputation, mode), the batch, precision and memory recipe, communication, and compute. Every field carries
its bounds and its help; `cli/options.py` turns each field into one flag (the `flag` in its metadata) and hands
the command a validated `Options`. A field left at None means "choose for me": the report says what was chosen.
"""

# No `from __future__ import annotations` here: pydantic would evaluate each string annotation as it builds the
# class (engine/report.py imported in 28 ms without it, 45 ms with it: start-up, README's Speed).

import re
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from dpcost.engine.host import MOE_LAYER_HOST_SECONDS
from dpcost.engine.layout import DEFAULT_ORDER
from dpcost.engine.memory import offload_applies
from dpcost.engine.synchronous_fetch import LIST_HOST_SECONDS_PER_RANK
from dpcost.errors import in_plain_words, shown_value
from dpcost.specs import nccl_algo_setting
from dpcost.units import parse_bytes, parse_fraction, parse_seconds, parse_whole

__all__ = [
    "WRITTEN",
    "Batch",
    "Communication",
    "Compute",
    "Fraction",
    "Options",
    "Parallel",
    "Plan",
    "Precision",
    "RecomputeModule",
    "Whole",
    "choices",
    "field_flag",
    "flag",
    "written_size",
    "written_time",
]

# Dense-BF16 MFU of well-tuned large runs (PaLM 46%; Llama 3 405B 38-43% on 16K H100s, Dubey et al. 2024, Table 4,
# communication and bubbles included; MegaScale 55%): 40% for the math alone.
DEFAULT_MFU = 0.40
# s per sqrt(s) of compute; fitted to llm-foundry's H100 FSDP weak scaling: benchmarks/training_scaling.py --fit
DEFAULT_SYNC_JITTER = 26.0e-3


def _auto(value: Any) -> Any:
    """`auto` (or nothing) means: dpcost chooses."""
    return None if value is None or (isinstance(value, str) and value.strip().lower() == "auto") else value


# Validated with this context, a value came from a person (a flag, a plan file): a size or a time must carry
# its unit. The Python API passes SI numbers.
WRITTEN = {"units": "required"}


def _written(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("units") == "required")


def written_size(value: Any, info: ValidationInfo) -> Any:
    """A size: with its unit where a person wrote it (WRITTEN), bytes from the Python API."""
    return None if value is None else parse_bytes(value, unit_required=_written(info))


def written_time(value: Any, info: ValidationInfo) -> Any:
    """A time: with its unit where a person wrote it (WRITTEN), seconds from the Python API."""
    return None if value is None else parse_seconds(value, unit_required=_written(info))


def _whole(value: Any) -> Any:
    return None if value is None else parse_whole(value)


FRACTION = "X|X%"  # a fraction's metavar: 0.4 or 40%
Whole = Annotated[int, BeforeValidator(_whole)]
Fraction = Annotated[float, BeforeValidator(parse_fraction)]


def _optional_fraction(value: Any) -> Any:
    return None if _auto(value) is None else parse_fraction(value)


def _comma_list(value: Any) -> Any:
    """`a,b` from a flag or plan file, or a list."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _cublas_workspace_config(value: Any) -> Any:
    """PyTorch's CUBLAS_WORKSPACE_CONFIG: one or more :SIZE:COUNT pairs, SIZE in KiB (CublasHandlePool.cpp)."""
    if value is None:
        return None
    text = str(value).strip()
    if not re.fullmatch(r"(:\d+:\d+)+", text):
        raise ValueError("must be :SIZE:COUNT pairs, SIZE in KiB, as CUBLAS_WORKSPACE_CONFIG is (:4096:8)")
    return text


def _stage(value: Any) -> Any:
    value = _auto(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def cli(flag: str, short: str | None = None, auto: bool = False, metavar: str | None = None) -> dict[str, Any]:
    """A field's flag: how `cli/options.py` spells it, its short form, whether `auto` stands for None, and what
    its value looks like in --help."""
    return {"flag": flag, "short": short, "auto": auto, "metavar": metavar}


# Megatron-LM's --recompute-modules choices that dpcost prices (transformer_config.py recompute_modules)
RecomputeModule = Literal["core_attn", "layernorm", "mlp", "moe_act", "moe", "mla_up_proj", "shared_experts"]
EpDispatcher = Literal["alltoall", "flex", "allgather"]  # Megatron-Core's --moe-token-dispatcher-type values
PpSendComm = Literal["group", "pair"]  # the communicator of the pipeline's send/recv (layout_step.pp_send_communicator)
OptimizerImpl = Literal["foreach", "fused", "for-loop"]  # torch.optim's implementations (torchtitan's spelling)
# How the loss holds and passes over the logits: each one's tensors in engine/loss.py, its traffic in engine/ops.py
LossImpl = Literal[
    "upcast",
    "bf16",
    "chunked",
    "chunked-head",
    "fused",
    "loss-parallel",
    "vocab-parallel",
    "vocab-parallel-fused",
    "vocab-parallel-te",
]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Plan(Section):
    """What is being planned: how many replicas, how they shard, and what they run."""

    zero: Annotated[Literal[0, 1, 2, 3] | None, BeforeValidator(_stage)] = Field(
        None,
        description="ZeRO stage 0-3, or auto: the fastest stage that fits (with recompute auto, of both).",
        json_schema_extra=cli("--zero", auto=True),
    )
    recompute: Annotated[Literal["none", "selective", "op", "full"] | None, BeforeValidator(_auto)] = Field(
        None,
        description="Activation recomputation: none; selective (Megatron's, of --recompute-modules); op "
        "(torchtitan's per-op SAC); full; or auto: the fastest choice that fits (see --zero).",
        json_schema_extra=cli("--recompute", auto=True),
    )
    recompute_layers: Whole = Field(
        1,
        ge=1,
        le=1_000_000,
        description="Apply --recompute to every K-th block only, keeping everything in the others (torchtitan's "
        "selective_ac_option = K).",
        json_schema_extra=cli("--recompute-layers", metavar="K"),
    )
    recompute_block: Whole | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="With --recompute full: the first N layers of each pipeline chunk re-run their forward, the "
        "others keep all they save (Megatron-LM's --recompute-method block --recompute-num-layers N) [default: "
        "every layer].",
        json_schema_extra=cli("--recompute-block", metavar="N"),
    )
    recompute_modules: Annotated[
        tuple[RecomputeModule, ...],
        BeforeValidator(_comma_list),
    ] = Field(
        ("core_attn",),
        description="With --recompute selective: the modules recomputed, comma-separated (Megatron-LM's "
        "--recompute-modules: core_attn, layernorm, mlp, moe_act, moe, mla_up_proj, shared_experts).",
        json_schema_extra=cli("--recompute-modules", metavar="M[,M...]"),
    )
    mode: Literal["train", "inference"] = Field(
        "train", description="train, or inference (no gradient collectives).", json_schema_extra=cli("--mode")
    )
    shard_group: Whole | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Hybrid sharding: shard the ZeRO states within groups of N consecutive GPUs and replicate them "
        "across the DP / N groups (FSDP's HYBRID_SHARD and FSDP2's 2-D mesh, DeepSpeed MiCS); gradients are "
        "reduce-scattered in the group, then all-reduced across replicas. Under --framework fsdp with --cp, N "
        "GPUs of DP x CP, whole CP groups [default: shard over all of DP].",
        json_schema_extra=cli("--shard-group", metavar="N"),
    )
    framework: Literal["ddp", "fsdp", "deepspeed", "megatron"] | None = Field(
        None,
        description="Run the step as this framework does: its schedule, buckets and memory accounting "
        "(docs/frameworks.md); each setting can still be overridden by its own flag. Default: the ZeRO paper's "
        "generic plan.",
        json_schema_extra=cli("--framework"),
    )


class Batch(Section):
    """B = b x a x D: micro-batch, accumulation and DP; or the global batch held fixed."""

    micro_batch: Whole = Field(
        1,
        ge=1,
        le=10**6,
        description="Sequences per GPU per micro-batch.",
        json_schema_extra=cli("--micro-batch", "-b"),
    )
    seq_len: Whole | None = Field(
        None,
        ge=1,
        le=10**7,
        description="Tokens per sequence [default: 4096, or the model's learned-position limit].",
        json_schema_extra=cli("--seq-len", "-s"),
    )
    accumulation: Whole | None = Field(
        None,
        ge=1,
        le=10**6,
        description="Gradient accumulation steps [default: 1].",
        json_schema_extra=cli("--accum", "-a"),
    )
    global_batch: Whole | None = Field(
        None,
        ge=1,
        le=10**12,
        description="Hold the global batch (sequences) fixed: accumulation is derived.",
        json_schema_extra=cli("--global-batch"),
    )
    serving_batch: Whole = Field(
        1, ge=1, le=10**6, description="Inference: concurrent sequences per replica.", json_schema_extra=cli("--batch")
    )


class Precision(Section):
    """The model-state recipe: bytes per parameter for weights, gradients and optimizer states."""

    recipe: Literal["zero-paper", "deepspeed", "megatron", "ddp", "fsdp", "bf16"] | None = Field(
        None,
        description="Model-state recipe [default: the framework's, else zero-paper]; bf16: pure bf16 weights, "
        "grads and optimizer states (torchtune, litgpt bf16-true).",
        json_schema_extra=cli("--recipe"),
    )
    grad_dtype: Literal["fp32", "bf16", "fp16", "fp8", "int8"] | None = Field(
        None,
        description="Communicated gradient dtype [default: the recipe's]; fp8 and int8 move 1 byte per value (int8 "
        "priced as 1-byte collectives; a quantized reduction by all-to-all is --zeropp qgz).",
        json_schema_extra=cli("--grad-dtype"),
    )
    grad_accum_dtype: Literal["fp32", "bf16"] | None = Field(
        None,
        description="DeepSpeed's data_types.grad_accum_dtype [default: the model's, bf16]; fp32 at ZeRO-1 runs its "
        "BF16_Optimizer: an fp32 gradient buffer kept beside the bf16 gradients, reduced in --grad-dtype (with "
        "--framework megatron or a layout: as Megatron-DeepSpeed runs it).",
        json_schema_extra=cli("--grad-accum-dtype"),
    )

    @property
    def bf16_optimizer(self) -> bool:
        """Whether the plan runs DeepSpeed's BF16_Optimizer: fp32 gradient accumulation (--grad-accum-dtype fp32)."""
        return self.grad_accum_dtype == "fp32"

    grad_block: Whole | None = Field(
        None,
        ge=1,
        le=1 << 30,
        description="fp8 or int8 gradients: values per fp32 scale (per-block scaling, e.g. 128), whose 4 bytes "
        "travel with them [default: no scales counted].",
        json_schema_extra=cli("--grad-block", metavar="N"),
    )
    optimizer: Literal["adamw", "sgd", "adam8bit", "adafactor", "muon"] = Field(
        "adamw",
        description="Optimizer (its states per parameter; muon: one momentum on the weight matrices, each "
        "orthogonalized by Newton-Schulz at the step, AdamW on the rest).",
        json_schema_extra=cli("--optimizer"),
    )
    offload: Literal["none", "optimizer", "params"] = Field(
        "none",
        description="Offload to CPU memory: the optimizer, or params (params and optimizer).",
        json_schema_extra=cli("--offload"),
    )
    grads_between_steps: Literal["freed", "kept"] = Field(
        "freed",
        description="PyTorch's .grad between optimizer steps: freed (zero_grad(set_to_none=True), PyTorch's default "
        "since 2.0) or kept as zeros (set_to_none=False, the default before 2.0), held through the next forward.",
        json_schema_extra=cli("--grads-between-steps"),
    )
    optimizer_impl: OptimizerImpl | None = Field(
        None,
        description="How torch.optim's AdamW steps: foreach holds one state's worth of intermediates at the step "
        "(PyTorch's default on CUDA since 2.0); fused and for-loop, none to speak of [default: the framework's "
        "(docs/frameworks.md), else fused].",
        json_schema_extra=cli("--optimizer-impl"),
    )
    sub_group_size: Whole | None = Field(
        None,
        ge=0,
        le=10**15,
        description="DeepSpeed's zero_optimization.sub_group_size: ZeRO-3 steps its optimizer over sub-groups of at "
        "least N partitioned elements, each cast to fp32 at the step in turn; 0: one parameter at a time "
        "[default: DeepSpeed's 1e9].",
        json_schema_extra=cli("--sub-group-size", metavar="N"),
    )


class Communication(Section):
    """How the gradients and parameters travel."""

    bucket_bytes: Annotated[float | None, BeforeValidator(written_size)] = Field(
        None,
        gt=0,
        description="Gradient bucket size [default: the framework's, else PyTorch DDP's 25MiB].",
        json_schema_extra=cli("--bucket-size", metavar="SIZE"),
    )
    first_bucket_bytes: Annotated[float | None, BeforeValidator(written_size)] = Field(
        None,
        ge=0,
        description="The first gradient bucket's size [default: the framework's: DDP's 1MiB, else as the others].",
        json_schema_extra=cli("--first-bucket-size", metavar="SIZE"),
    )
    bucket_count: Whole | None = Field(
        None,
        ge=1,
        le=10_000,
        description="Megatron's --ddp-num-buckets: each gradient bucket a first pipeline stage GPU's parameters over "
        "N, in elements (engine/frameworks.py megatron_count_bucket); not beside --bucket-size.",
        json_schema_extra=cli("--bucket-count", metavar="N"),
    )
    gather_dtype: Literal["bf16", "fp8", "nvfp4"] | None = Field(
        None,
        description="What sharded parameters are all-gathered in [default: the recipe's weights; fp8 as "
        "torchtitan's float8 all-gather does; with Megatron, --fp8-param-gather, which also stores them in fp8; "
        "nvfp4, Megatron's --fp4-param-gather under --compute-dtype nvfp4].",
        json_schema_extra=cli("--gather-dtype"),
    )
    overlap_comm: bool | None = Field(
        None,
        description="Overlap the gradient reduction with the backward pass [default: the framework's; DeepSpeed "
        "stages 1-2 do not].",
        json_schema_extra=cli("--overlap-comm"),
    )
    algorithm: Literal["ring", "tree", "hierarchical", "nvls", "nvls_tree", "collnet", "pat"] | None = Field(
        None,
        description="Force a collective algorithm (hierarchical is a what-if NCCL does not run).",
        json_schema_extra=cli("--algorithm"),
    )
    protocol: Literal["ll", "ll128", "simple"] | None = Field(
        None,
        description="Force NCCL's protocol (NCCL_PROTO) [default: the topology's, else NCCL's choice].",
        json_schema_extra=cli("--protocol"),
    )
    nccl_algo: Annotated[str, BeforeValidator(nccl_algo_setting)] | None = Field(
        None,
        description="NCCL_ALGO: the algorithms NCCL may choose among for each collective, as NCCL reads it (^NVLS, "
        "Ring,Tree, allreduce:tree,ring), leaving every collective Ring [default: the topology's, else all].",
        json_schema_extra=cli("--nccl-algo", metavar="SETTING"),
    )
    nvls: bool | None = Field(
        None,
        description="NVLS/NVLSTree allowed (NCCL_NVLS_ENABLE; off without fabric manager or IMEX) [default: the "
        "topology's].",
        json_schema_extra=cli("--nvls", metavar="on|off"),
    )
    collnet: bool | None = Field(
        None,
        description="CollNet/SHARP allowed (NCCL_COLLNET_ENABLE) [default: the topology's].",
        json_schema_extra=cli("--collnet", metavar="on|off"),
    )
    grad_reduce: Literal["reduce-scatter", "all-reduce"] | None = Field(
        None,
        description="ZeRO 1-2: the collective that reduces each gradient bucket. all-reduce: every rank receives "
        "the whole reduced gradient and updates its own shard, as nanotron's ZeRO-1 (its trainer all-reduces the "
        "fp32 gradient buffer) and PyTorch's ZeroRedundancyOptimizer under DDP run it [default: the framework's: "
        "all-reduce for DeepSpeed's stages 1-2 (stage_1_and_2.py allreduce_bucket), reduce-scatter for Megatron "
        "and the generic plan]. Give --zero 1 or 2 with it.",
        json_schema_extra=cli("--grad-reduce"),
    )
    keep_full_grads: bool = Field(
        False,
        description="Stages 2-3: accumulate unsharded gradients, reduce once per step.",
        json_schema_extra=cli("--keep-full-grads"),
    )
    zero3_fetch: Literal["prefetched", "synchronous"] | None = Field(
        None,
        description="How DeepSpeed's ZeRO-3 gathers: prefetched (v0.6.0 on: a unit's parameters together, the next "
        "unit's beside the compute) or synchronous (v0.3-v0.5.4: unit by unit, each parameter of 1e5 elements or "
        "more gathered in a call of its own, again for a recomputed block, each gradient reduce-scattered in a call of "
        "its own, through torch's list collectives, whose host loop over the ranks the device waits for; nothing "
        "beside the compute; engine/synchronous_fetch.py) [default: prefetched]. Give --framework deepspeed.",
        json_schema_extra=cli("--zero3-fetch"),
    )
    zeropp: Annotated[tuple[Literal["hpz", "qwz", "qgz"], ...], BeforeValidator(_comma_list)] = Field(
        (),
        description="ZeRO++ on ZeRO-3, any of: hpz (a secondary parameter shard in each node), qwz (int8 weight "
        "gathers), qgz (int4 gradients by hierarchical all-to-all) (DeepSpeed's zero_hpz_partition_size, "
        "zero_quantized_weights, zero_quantized_gradients; engine/variants.py).",
        json_schema_extra=cli("--zeropp", metavar="hpz,qwz,qgz"),
    )
    compression: Literal["powersgd", "1bit-adam", "01-adam"] | None = Field(
        None,
        description="Gradient compression: powersgd (DDP's PowerSGD hook, rank --rank), 1bit-adam or 01-adam "
        "(DeepSpeed's, after their warm-up) (engine/variants.py).",
        json_schema_extra=cli("--compression"),
    )
    powersgd_rank: Whole = Field(
        1,
        ge=1,
        le=1024,
        description="PowerSGD's rank r (matrix_approximation_rank; PyTorch's default 1).",
        json_schema_extra=cli("--rank", metavar="R"),
    )
    sync_every: Whole | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Local SGD / DiLoCo: replicas (each --shard-group GPUs, else each site or node the DP group "
        "spans) run H inner steps alone, then all-reduce their fp32 parameter deltas (engine/variants.py).",
        json_schema_extra=cli("--sync-every", metavar="H"),
    )
    streaming: Whole = Field(
        1,
        ge=1,
        le=10_000,
        description="Streaming DiLoCo: sync 1/F of the model every H/F inner steps, overlapped with the next ones.",
        json_schema_extra=cli("--streaming", metavar="F"),
    )


class Compute(Section):
    """How fast the math runs."""

    mfu: Annotated[float | None, BeforeValidator(_optional_fraction)] = Field(
        None,
        ge=0.001,
        le=1,
        description="--compute-model flops: the share of the dense peak every FLOP executed sustains [default: "
        "0.40]; ops: the share the matmuls sustain [default: the GPU's own, engine/rates.py], attention and "
        "memory-bound ops keeping their own rates. A value given is read as measured in the job: the wait for "
        "the slowest GPU's sustained rate is not added to it.",
        json_schema_extra=cli("--mfu", metavar=FRACTION),
    )
    compute_model: Annotated[Literal["flops", "ops"] | None, BeforeValidator(_auto)] = Field(
        None,
        description="How compute time is priced: flops (PaLM's model FLOPs at one --mfu) or ops (each op's FLOPs "
        "and bytes at the GPU's sustained matmul, attention and HBM rates, engine/ops.py; against published "
        "data-parallel runs it reads 37% slow to 39% fast, README) [default: ops, each GEMM at its TP shard under "
        "a layout (docs/layouts.md); flops where the model has no per-op times (no architecture; Mamba-1, "
        "DeltaNet, lightning attention or short-convolution layers)].",
        json_schema_extra=cli("--compute-model", auto=True),
    )

    @property
    def chosen_model(self) -> str:
        """The compute model a prepared plan is priced with (prepare.compute_model_for fills it in)."""
        return self.compute_model or "ops"

    flash_attention: bool = Field(
        True, description="Flash attention stores no s^2 scores.", json_schema_extra=cli("--flash-attention")
    )
    compile: bool = Field(
        False,
        description="torch.compile: element-wise intermediates are recomputed, not stored (off: eager PyTorch).",
        json_schema_extra=cli("--compile"),
    )
    grad_accumulation_fusion: bool = Field(
        True,
        description="Megatron's fused gradient accumulation (its default; off: --no-gradient-accumulation-fusion): "
        "Transformer Engine's linear layers add weight gradients into the fp32 main gradients inside the GEMM and "
        "keep one 16-bit placeholder per distinct weight shape for the run (TE since 2025-04; turn it off for "
        "older stacks). Off, each micro-batch's backward adds every weight gradient into its main gradient in a "
        "pass of its own (Megatron's hook; nanotron's fp32 accumulator).",
        json_schema_extra=cli("--grad-accumulation-fusion"),
    )
    fused_grouped_mlp: bool = Field(
        False,
        description="Megatron-Core's routed experts through Transformer Engine's CuTe-DSL grouped MLP (Megatron's "
        "--use-transformer-engine-op-fuser with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1; Megatron-Bridge's "
        "cutedsl_fused_grouped_mlp): fc1's kernel applies the gated activation (SwiGLU, or GPT-OSS's clamped "
        "QGeGLU), the routing probabilities and the MXFP8 cast of its output, and fc2's gradient kernel the "
        "activation's backward and its cast (TE 2.16 ops/fused/forward_grouped_mlp.py, backward_grouped_mlp.py), so "
        "those passes leave HBM. MXFP8 on Blackwell only: --compute-dtype fp8 on an SM 10.x GPU.",
        json_schema_extra=cli("--fused-grouped-mlp"),
    )
    fp8_output_proj: bool = Field(
        False,
        description="Megatron-Core's output layer (and MTP's) in MXFP8 rather than BF16 (TransformerConfig "
        "fp8_output_proj, #4825: a Transformer Engine TELMHeadColumnParallelLinear under the MXFP8 autocast, "
        "gpt_model.py), with the casts of its input and its output's gradient. MXFP8 only: --compute-dtype fp8 on an "
        "SM 10.x GPU, in a layout or --framework megatron.",
        json_schema_extra=cli("--fp8-output-proj"),
    )
    attention_kernel: Literal["flash2", "cudnn"] | None = Field(
        None,
        description="The kernel flash attention runs, at its measured rate (engine/rates.py): flash2, "
        "FlashAttention-2 (PyTorch's SDPA, the flash-attn package: nanotron, most eager stacks), or cudnn, cuDNN's "
        "fused attention (Transformer Engine's, which Megatron runs) [default: the framework's: cudnn for Megatron, "
        "flash2 otherwise].",
        json_schema_extra=cli("--attention-kernel"),
    )
    unfused_softmax_fp32: bool = Field(
        False,
        description="Attention without flash keeps its softmax's fp32 output for the backward: Megatron's unfused "
        "softmax under --attention-softmax-in-fp32 (or --apply-query-key-layer-scaling), where its fused kernel "
        "does not run (--no-masked-softmax-fusion, or over 4,096 keys), or Transformer Engine's unfused attention "
        "over 16,383 keys; 2 bytes a score more than the fused "
        "kernel's 16-bit output, 4 without attention dropout (the matmul with V keeps a 16-bit copy) "
        "(megatron/core/fusions/fused_softmax.py forward_torch_softmax). Memory only: the step is timed as fused.",
        json_schema_extra=cli("--unfused-softmax-fp32"),
    )
    cublas_workspace_config: Annotated[str | None, BeforeValidator(_cublas_workspace_config)] = Field(
        None,
        description="PyTorch's CUBLAS_WORKSPACE_CONFIG as the job sets it, :SIZE:COUNT pairs in KiB: each of the two "
        "cuBLAS handles a training step uses keeps their sum (engine/workspaces.py). Megatron's --deterministic-mode "
        "sets :4096:8, 32 MiB [default: unset, PyTorch's per GPU: 32 MiB on Hopper and Blackwell, 8.125 MiB before].",
        json_schema_extra=cli("--cublas-workspace-config", metavar=":SIZE:COUNT"),
    )
    repeat_kv: bool = Field(
        True,
        description="Eager attention copies grouped-query K and V out to every query head and keeps the copies "
        "(torchtitan's and torchtune's repeat_kv; transformers' with a padding mask) [off: the flash kernel reads "
        "them grouped, as transformers' SDPA does without a mask (use_gqa_in_sdpa: enable_gqa), where K's and V's "
        "head dims are equal and at most 256 and no window or chunk as long as the sequence keeps a mask].",
        json_schema_extra=cli("--repeat-kv"),
    )
    loss_impl: LossImpl | None = Field(
        None,
        description="How the loss holds and passes over the logits: upcast (fp32 copy), bf16, chunked (torchtune), "
        "chunked-head (torchtitan's ChunkedLossWrapper: the output projection, the loss and their backward a chunk "
        "at a time, no logits kept), "
        "fused (compiled, Liger's or flash-attn's), loss-parallel (torch's loss_parallel over vocabulary shards, "
        "torchtitan's under --framework fsdp with --tp), vocab-parallel (Megatron), vocab-parallel-fused (Megatron's "
        "--cross-entropy-loss-fusion, compiled: one fp32 copy more), vocab-parallel-te (with "
        "--cross-entropy-fusion-impl te: Transformer Engine's kernel, in place in the bf16 logits) [default: the "
        "framework's, else upcast].",
        json_schema_extra=cli("--loss-impl"),
    )
    skew: Fraction = Field(
        0.0,
        ge=0,
        le=10,
        description="The slowest rank's extra compute, e.g. 0.05 for 5%.",
        json_schema_extra=cli("--skew", metavar=FRACTION),
    )
    compute_dtype: Literal["bf16", "fp8", "nvfp4"] = Field(
        "bf16",
        description="The tensor-core precision of the matmuls, and so the peak --mfu scales (FP8 or NVFP4: the "
        "GPU's dense FP8 or FP4 peak; MFU is reported against it). The output head and the MoE router stay in 16 "
        "bits, as Megatron-Core and torchtitan run them.",
        json_schema_extra=cli("--compute-dtype"),
    )
    fp8_recipe: Literal["delayed", "tensorwise", "blockwise", "mxfp8", "rowwise"] | None = Field(
        None,
        description="Transformer Engine's FP8 scaling recipe (Megatron's --fp8-recipe), for the bytes it holds each "
        "FP8 weight in, both usages: per-tensor scaling (delayed, tensorwise) one, and its transpose on Hopper; "
        "blockwise and mxfp8 (Blackwell) a row- and a column-wise copy with their scales; and for the matmul "
        "inputs it saves for the backward, which delayed scaling keeps beside bf16 copies where the others reuse "
        "them (engine/low_precision_weights.py). rowwise: torchao's per-row scaling under --framework fsdp "
        "(torchtitan's float8 recipe_name rowwise), whose tensor-parallel gathers stay in BF16 where tensorwise's "
        "run in FP8. Every recipe's matmuls and casts are costed alike [default: mxfp8 under --fused-grouped-mlp "
        "or --fp8-output-proj, else tensorwise].",
        json_schema_extra=cli("--fp8-recipe"),
    )
    bf16_layers_at_start: Whole = Field(
        0,
        ge=0,
        le=100_000,
        description="Under --compute-dtype fp8 or nvfp4, the first N decoder layers' matmuls run in BF16 "
        "(Megatron-Core's --first-last-layers-bf16 with --num-layers-at-start-in-bf16: "
        "fp8_utils.is_first_last_bf16_layer); op by op only.",
        json_schema_extra=cli("--bf16-layers-at-start", metavar="N"),
    )
    bf16_layers_at_end: Whole = Field(
        0,
        ge=0,
        le=100_000,
        description="Under --compute-dtype fp8 or nvfp4, the last N decoder layers' matmuls run in BF16 "
        "(Megatron-Core's --num-layers-at-end-in-bf16); op by op only.",
        json_schema_extra=cli("--bf16-layers-at-end", metavar="N"),
    )

    @property
    def bf16_layers(self) -> tuple[int, int]:
        """The decoder layers that run in BF16 under a low-precision recipe: (at the start, at the end)."""
        return self.bf16_layers_at_start, self.bf16_layers_at_end

    overlap_slowdown: Annotated[float | None, BeforeValidator(_optional_fraction)] = Field(
        None,
        ge=0,
        le=1,
        description="How much slower compute runs while a collective overlaps it, for every call (NCCL's kernels "
        "take SMs and HBM bandwidth; docs/frameworks.md) [default: each call's own: its NCCL channels hold an SM "
        "each, and compute on the c SMs of S left runs c / (S - c) slower, 13.8% beside 16 of an H100's 132].",
        json_schema_extra=cli("--overlap-slowdown", metavar=FRACTION),
    )
    sync_jitter: Annotated[float, BeforeValidator(written_time)] = Field(
        DEFAULT_SYNC_JITTER,
        ge=0,
        le=1,
        description="A rank's drift: one standard deviation of its compute after one second (it grows as the "
        "square root of the compute since the ranks last met); a collective waits for the slowest of N beyond its "
        "prefetch slack (docs/frameworks.md).",
        json_schema_extra=cli("--sync-jitter", metavar="TIME"),
    )
    list_host_time: Annotated[float | None, BeforeValidator(written_time)] = Field(
        None,
        ge=0,
        le=1e-3,
        description="Under --zero3-fetch synchronous: the host time, a rank, of one torch list collective (the "
        "Python loop that builds the list and c10d's copy a rank: engine/synchronous_fetch.py) [default: "
        f"{LIST_HOST_SECONDS_PER_RANK * 1e6:g}us, fitted on published runs].",
        json_schema_extra=cli("--list-host-time", metavar="TIME"),
    )
    moe_host_time: Annotated[float | None, BeforeValidator(written_time)] = Field(
        None,
        ge=0,
        le=1,
        description="A layout's MoE layers: the host (CPU) time of one layer's forward and backward for a "
        "micro-batch, which the layer takes at least, as Megatron-Core's dispatcher syncs host and device once a "
        f"layer (engine/host.py); 0 for full-iteration CUDA graphs [default: {MOE_LAYER_HOST_SECONDS * 1e3:g}ms, "
        "fitted on published runs].",
        json_schema_extra=cli("--moe-host-time", metavar="TIME"),
    )


class Parallel(Section):
    """Data parallelism as one dimension of a layout: GPUs = TP x CP x PP x DP, Megatron-Core's rank order
    (engine/layout.py). All 1: pure data parallelism, costed as before."""

    tp: Whole = Field(
        1, ge=1, le=1024, description="Tensor-parallel size (Megatron-LM).", json_schema_extra=cli("--tp")
    )
    cp: Whole = Field(1, ge=1, le=1024, description="Context-parallel size: the sequence split over CP ranks.",
                      json_schema_extra=cli("--cp"))  # fmt: skip
    pp: Whole = Field(1, ge=1, le=1024, description="Pipeline-parallel stages.", json_schema_extra=cli("--pp"))
    ep: Whole = Field(
        1,
        ge=1,
        le=4096,
        description="Expert-parallel size: the experts split over EP ranks, carved out of DP x CP (Megatron-Core).",
        json_schema_extra=cli("--ep"),
    )
    etp: Whole | None = Field(
        None, ge=1, le=1024, description="Expert tensor-parallel size [default: TP].", json_schema_extra=cli("--etp")
    )
    order: str = Field(
        DEFAULT_ORDER,
        description="Rank order, fastest-varying first (Megatron-Core's --order).",
        json_schema_extra=cli("--order", metavar="tp-cp-ep-dp-pp"),
    )
    virtual_stages: Whole = Field(
        1,
        ge=1,
        le=1024,
        description="Model chunks per pipeline rank (interleaved 1F1B): the bubble is (PP - 1) / V micro-batch slots.",
        json_schema_extra=cli("--virtual-stages", metavar="V"),
    )
    microbatch_group: Whole | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Micro-batches an interleaved pipeline runs in a row on each virtual stage (Megatron's "
        "--microbatch-group-size-per-virtual-pipeline-stage, PP to the micro-batches per step): the warm-up holds "
        "(V - 1) x it chunks [default: PP].",
        json_schema_extra=cli("--microbatch-group", metavar="N"),
    )
    pp_schedule: Literal["1f1b", "interleaved", "gpipe"] | None = Field(
        None,
        description="Pipeline schedule: 1F1B, interleaved 1F1B (with --virtual-stages), or GPipe (every forward "
        "before any backward: the same bubble, all micro-batches' activations held) [default: interleaved with "
        "--virtual-stages above 1, else 1F1B].",
        json_schema_extra=cli("--pp-schedule"),
    )
    first_stage_layers: Whole | None = Field(
        None,
        ge=0,
        le=100_000,
        description="Decoder layers on the first pipeline stage, the rest split evenly over the others (Megatron's "
        "--decoder-first-pipeline-num-layers) [default: the end stages take the remainder when PP does not divide "
        "the layers].",
        json_schema_extra=cli("--first-stage-layers", metavar="N"),
    )
    last_stage_layers: Whole | None = Field(
        None,
        ge=0,
        le=100_000,
        description="Decoder layers on the last pipeline stage (Megatron's --decoder-last-pipeline-num-layers).",
        json_schema_extra=cli("--last-stage-layers", metavar="N"),
    )
    pipeline_layout: str | None = Field(
        None,
        max_length=4096,
        description="Every virtual stage's layers, as Megatron-Core's --pipeline-model-parallel-layout writes them: "
        "PP x V stages split by |, E the embedding, t a decoder layer, m an MTP module, L the loss, (...)*n and x*n "
        "repeating; virtual stage i on rank i mod PP (e.g. 'Et*4|(t*4|)*14tmL': DeepSeek-V3 on PP 4 x V 4) "
        "[default: the even split].",
        json_schema_extra=cli("--pipeline-layout", metavar="LAYOUT"),
    )
    mtp_layers: Whole = Field(
        0,
        ge=0,
        le=64,
        description="Multi-token-prediction modules trained on the last pipeline stage, each a layer of the model's "
        "last layer's kind and the output head again (Megatron-Core's --mtp-num-layers; DeepSeek-V3 trains 1).",
        json_schema_extra=cli("--mtp-layers", metavar="N"),
    )
    sequence_parallel: bool = Field(
        False,
        description="Megatron's sequence parallelism: TP's all-reduces become all-gathers and reduce-scatters, and "
        "the norms' activations are split over TP.",
        json_schema_extra=cli("--sequence-parallel"),
    )
    tp_comm_overlap: bool = Field(
        False,
        description="Overlap TP's collectives with the layer's matmuls (Transformer Engine's userbuffers).",
        json_schema_extra=cli("--tp-comm-overlap"),
    )
    tp_backward_async: bool = Field(
        True,
        description="TP's backward all-reduce (or reduce-scatter) of the input gradient runs beside the "
        "weight-gradient matmul, as Megatron-LM has run it since 16c90445 (2021-09); off: the backward waits for it "
        "as the forward does, as the runs of Narayanan et al. (SC'21) did, Megatron's --delay-wgrad-compute does and "
        "torchtitan's DTensor tensor parallelism does.",
        json_schema_extra=cli("--tp-backward-async"),
    )
    pp_comm_overlap: bool | None = Field(
        None,
        description="Overlap the pipeline's send/recv with the next model chunk's compute (Megatron's "
        "overlap_p2p_comm) [default: on with --virtual-stages above 1, as Megatron-LM sets it; the non-interleaved "
        "1F1B cannot].",
        json_schema_extra=cli("--pp-comm-overlap", metavar="on|off"),
    )
    pp_scatter_gather: bool = Field(
        False,
        description="Split each pipeline send over TP and all-gather it over TP after the receive, where sequence "
        "parallelism has not split it (Megatron-LM's scatter_gather_tensors_in_pipeline, SC'21 section 4.1: on by "
        "default until the pipeline moved into Megatron-Core, 3c92fa93, 2023-03).",
        json_schema_extra=cli("--pp-scatter-gather"),
    )
    pp_send_comm: PpSendComm | None = Field(
        None,
        description="The communicator the pipeline's send/recv run on: group, the whole PP group's, as PyTorch 1.12 "
        "and later runs Megatron's batched sends (batch_isend_irecv); pair, a 2-rank one per neighbouring pair, as a "
        "lone (overlapped) isend/irecv gets, and batched sends did before PyTorch 1.12. NCCL gives each peer of a "
        "group above 8 ranks fewer channels [default: group where the sends are waited for, pair where overlapped].",
        json_schema_extra=cli("--pp-send-comm", metavar="group|pair"),
    )
    ep_comm_overlap: bool = Field(
        False,
        description="Overlap the MoE all-to-alls with another micro-batch's compute (DeepSeek-V3's DualPipe).",
        json_schema_extra=cli("--ep-comm-overlap"),
    )
    ep_node_limit: Whole | None = Field(
        None,
        ge=1,
        le=1024,
        description="Node-limited routing: each token sent to at most M nodes, once over the network to each, and "
        "forwarded over NVLink to its experts (DeepSeek-V3 with DeepEP: M = 4) [default: every copy sent].",
        json_schema_extra=cli("--ep-node-limit", metavar="M"),
    )
    ep_dispatcher: EpDispatcher = Field(
        "alltoall",
        description="Megatron-Core's MoE token dispatcher: alltoall sends every top-k copy of a token to its expert's "
        "GPU; flex (DeepEP or HybridEP) sends a token once over the network to each NVLink domain that holds one of "
        "its experts, and forwards it there over NVLink; allgather (Megatron's default) gathers every token of the "
        "expert TP x EP group on every GPU of it and reduce-scatters the experts' outputs back.",
        json_schema_extra=cli("--ep-dispatcher"),
    )
    dist_opt_instances: int = Field(
        1,
        ge=1,
        description="Megatron's --num-distributed-optimizer-instances N (layouts, ZeRO 1): the optimizer states "
        "sharded within N instances of DP x CP / N ranks; gradients reduce-scattered within an instance and the "
        "shard all-reduced across the instances, parameters gathered within it (param_and_grad_buffer.py).",
        json_schema_extra=cli("--dist-opt-instances"),
    )
    defer_embedding_wgrad: Whole | None = Field(
        None,
        ge=0,
        le=1_000_000,
        description="Megatron's --defer-embedding-wgrad-compute with --wgrad-deferral-limit N (layouts with PP, "
        "gradient-accumulation fusion): the output layer's weight-gradient GEMMs of the step's first N calls run "
        "after the pipeline flush, and the last stage keeps each one's input and 16-bit logit gradient until then "
        "(0: every call; the step is timed as without it) [default: each in its backward].",
        json_schema_extra=cli("--defer-embedding-wgrad", metavar="N"),
    )
    grouped_gemm: bool = Field(
        True,
        description="An MoE layer's local experts run as Transformer Engine's grouped GEMMs (Megatron-Core's "
        "TEGroupedMLP, --moe-grouped-gemm), which keep 4 cuBLAS workspaces more; off: SequentialMLP, one GEMM per "
        "expert (Megatron-LM's default).",
        json_schema_extra=cli("--grouped-gemm"),
    )
    cp_impl: Literal["p2p", "all_gather", "a2a", "torch"] = Field(
        "p2p",
        description="Context parallelism as ring attention's send/recv (Megatron-Core), Llama 3's all-gather of K "
        "and V, DeepSpeed-Ulysses' all-to-alls of Q, K, V and the output, which need the heads of a TP rank "
        "divisible by CP (Megatron's --cp-comm-type a2a), or torch's context_parallel as torchtitan runs it (K and "
        "V all-gathered each pass, their gradients sent round the ring in fp32), which --framework fsdp runs in "
        "place of p2p.",
        json_schema_extra=cli("--cp-impl"),
    )

    @property
    def trivial(self) -> bool:
        """No dimension but DP: the pure data-parallel path."""
        return (self.tp, self.cp, self.pp, self.ep) == (1, 1, 1, 1)


SECTIONS: dict[str, type[Section]] = {
    "plan": Plan,
    "batch": Batch,
    "precision": Precision,
    "communication": Communication,
    "compute": Compute,
    "parallel": Parallel,
}


class Options(Section):
    """Everything a plan can be told. `Options(dp=512, micro_batch=2)` files flat names into their sections."""

    dp: Whole = Field(ge=1, le=10_000_000, description="Data-parallel size: GPUs, one replica each.")
    plan: Plan = Plan()
    batch: Batch = Batch()
    precision: Precision = Precision()
    communication: Communication = Communication()
    compute: Compute = Compute()
    parallel: Parallel = Parallel()

    @model_validator(mode="before")
    @classmethod
    def _sections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = {k: v for k, v in data.items() if k == "dp" or k in SECTIONS}
        for key, value in data.items():
            if key in out:
                continue
            section = next((name for name, model in SECTIONS.items() if key in model.model_fields), None)
            if section is None:
                out[key] = value  # extra="forbid" names it
                continue
            current = out.get(section, {})
            current = current.model_dump() if isinstance(current, BaseModel) else dict(current)
            out[section] = {**current, key: value}
        return out

    @model_validator(mode="after")
    def _block_needs_full_recomputation(self) -> "Options":
        """Megatron's --recompute-method applies to full recomputation alone (transformer_config.py), and picks its
        layers one way: not beside every K-th."""
        plan = self.plan
        if plan.recompute_block is not None and plan.recompute != "full":
            given = plan.recompute or "auto"
            raise ValueError(f"--recompute-block: Megatron's block method needs --recompute full, got {given}")
        if plan.recompute_block is not None and plan.recompute_layers != 1:
            raise ValueError("--recompute-block: give it or --recompute-layers, not both: each picks the layers")
        return self

    @model_validator(mode="after")
    def _offload_needs_sharding(self) -> "Options":
        """DeepSpeed's rule: the optimizer offloads from ZeRO-1, parameters only at ZeRO-3."""
        offload, zero = self.precision.offload, self.plan.zero
        if zero is not None and offload != "none" and not offload_applies(offload, zero):
            need = "ZeRO-3" if offload == "params" else "ZeRO 1-3"
            raise ValueError(f"--offload: {offload} offload needs {need} (DeepSpeed's rule), got --zero {zero}")
        return self

    def with_dp(self, dp: int) -> "Options":
        return self.model_copy(update={"dp": dp})

    def flags(self) -> list[str]:
        """The `estimate` flags that give these options: --dp and every option away from its default, sizes in
        bytes and times in seconds with their units (as WRITTEN requires)."""
        out = ["--dp", str(self.dp)]
        for section, model in SECTIONS.items():
            values = getattr(self, section)
            for name, info in model.model_fields.items():
                value, name_flag = getattr(values, name), flag(section, name)
                if value == info.default or value is None:
                    continue
                extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
                if isinstance(value, bool) and extra.get("metavar") == "on|off":
                    text = "on" if value else "off"
                elif isinstance(value, bool):
                    out.append(name_flag if value else f"--no-{name_flag[2:]}")
                    continue
                elif isinstance(value, tuple):
                    text = ",".join(str(v) for v in value)
                elif extra.get("metavar") == "SIZE":
                    text = f"{value:.0f}B"
                elif extra.get("metavar") == "TIME":
                    text = f"{value:g}s"
                else:
                    text = f"{value:g}" if isinstance(value, float) else str(value)
                out += [name_flag, text]
        return out

    @property
    def megatron_layout(self) -> bool:
        """Costed by the layout engine, as Megatron-LM runs it: a TP/CP/PP/EP layout, or Megatron at ZeRO 2-3
        (Megatron-FSDP, whose per-layer schedule that engine holds: engine/frameworks.py MEGATRON_FSDP)."""
        return not self.parallel.trivial or (self.plan.framework == "megatron" and (self.plan.zero or 0) >= 2)


def flag(section: str, field: str) -> str:
    """The CLI flag of a field, for messages: ('batch', 'accumulation') -> '--accum'."""
    model = SECTIONS.get(section)
    info = model.model_fields.get(field) if model is not None else None
    extra = info.json_schema_extra if info is not None and isinstance(info.json_schema_extra, dict) else {}
    return str(extra.get("flag") or "--" + field.replace("_", "-"))


def field_flag(name: str) -> str:
    """The CLI flag of a field named alone (`accumulation` -> `--accum`), or the name as a flag (`dp` -> `--dp`)."""
    section = next((section for section, model in SECTIONS.items() if name in model.model_fields), None)
    return flag(section, name) if section is not None else "--" + name.replace("_", "-")


def error_message(err: Any, info: Any = None) -> str:
    """pydantic's complaint about one value in dpcost's words: what is allowed, and what was given."""
    kind, ctx, given = err["type"], err.get("ctx") or {}, err.get("input")
    shown = shown_value(given)
    if kind == "greater_than_equal":
        bound = ctx.get("ge")
        return f"must be a positive integer, got {shown}" if bound == 1 else f"must be at least {bound}, got {shown}"
    if kind == "greater_than":
        return f"must be more than {ctx.get('gt')}, got {shown}"
    extra = info.json_schema_extra if info is not None and isinstance(info.json_schema_extra, dict) else {}
    if kind == "less_than_equal" and extra.get("metavar") == FRACTION:
        bound = ctx.get("le")
        return f"must be at most {bound:g} ({bound:.0%}), got {shown}: write a fraction, e.g. 0.4 or 40%"
    if kind == "less_than_equal":
        return f"{shown} is beyond {ctx.get('le'):,}; check the number"
    if kind == "literal_error" and info is not None:
        values = [str(v) for v in choices(info.annotation)]
        if extra.get("auto"):
            values.append("auto")
        return f"must be one of {', '.join(values[:-1])} or {values[-1]}, got {shown}"
    return in_plain_words(err)


def explain(exc: ValidationError) -> tuple[str, str]:
    """An invalid Options as (the flag at fault, what is allowed and what was given)."""
    err = exc.errors(include_url=False)[0]
    loc = [str(x) for x in err["loc"]]
    if len(loc) > 1 and loc[0] in SECTIONS:
        return flag(loc[0], loc[1]), error_message(err, SECTIONS[loc[0]].model_fields[loc[1]])
    if loc:
        return "--" + loc[0].replace("_", "-"), error_message(err)
    where, _, message = str(err["msg"]).removeprefix("Value error, ").partition(": ")
    return where, message


def choices(annotation: Any) -> tuple[Any, ...]:
    """The values a Literal field takes (None left out)."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    return tuple(v for arg in get_args(annotation) for v in choices(arg))
