"""Memory per GPU under a TP x CP x PP x EP x DP layout, as Megatron-LM accounts it (issue 19, section 3).

Sources, cited per function by their letter:
- [M] Megatron-LM megatron/training/theoretical_memory_usage.py at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553
  (the file last changed in 1bcb3b9e0b): compute_weight_and_optimizer_memory, compute_activation_memory (sequence
  parallelism with selective recomputation), compute_activation_memory_without_sp, report_theoretical_memory.
- [K] Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv 2205.05198),
  section 4: Table 2 (one layer with TP, SP, selective recomputation), 4.2.3 (the first pipeline stage keeps p
  micro-batches of L/p layers), 4.3 (interleaving's 1 + (p-1)/(pm); embedding dropout, final norm, output, loss).
- [S] megatron/core/pipeline_parallel/schedules.py get_pp_rank_microbatches (same commit): a rank's warm-up
  micro-batches, p - r - 1 under 1F1B and 2(p - r - 1) + (v - 1)p interleaved, at most all of them.
- [B] megatron/core/transformer/transformer_block.py get_num_layers_to_build: layers per stage, the uneven first and
  last stages (--decoder-first/last-pipeline-num-layers); interleaved rank r holds virtual stages r, r + p, ...
- [V] megatron/training/vocab_utils.py _calculate_padded_vocab_size_cached: vocabulary padded to 128 x TP.
- [G] megatron/core/models/gpt/gpt_model.py GPTModel.__init__: a last stage holding MTP builds an embedding too.
- [F] Megatron-FSDP (megatron/core/distributed/fsdp/src/megatron_fsdp/ at the same commit; engine/frameworks.py
  MEGATRON_FSDP), which the file does not cover: ZeRO 2 (optim_grads) and 3 (optim_grads_params) shard over DP x CP
  (param_and_grad_buffer.py _init_each_parameter_group_buffers; the experts over expert-DP), the main gradient in
  the parameters' dtype; the unsharded buffers a step holds (fsdp_buffer_bytes).
- [H] docs/sources/mamba-hybrid-layouts.md (Megatron-Core's Mamba layers, which the file does not cover: it prints
  "not yet supported for hybrid Mamba-Transformer models"): a hybrid's layer is a Mamba-2 mixer, attention or an MLP
  alone, each with its norm; the Mamba mixer's weights all split over TP; what its fused path keeps (section 3).
- [E] megatron/core/transformer/moe/ (same commit), which the file does not cover: the MoE layer's router
  (router.py), token dispatchers (token_dispatcher.py: each rank computes the routed copies of the tokens its expert
  tensor-parallel group holds) and TEGroupedMLP (experts.py: the grouped fc1's input and output, and the
  activation times the routing probability, which linear_fc2 keeps); moe_mlp_half_bytes.
- [A] megatron/core/transformer/attention.py, dot_product_attention.py and multi_latent_attention.py (same commit),
  which the file does not cover: Q, K, V and the core attention's output at their own widths (each head's, MLA's
  wider ones), K and V grouped (GQA) unless unfused attention copies them to every head, and MLA's latents
  (activations.mla_latent_tensors); attention_width_bytes. With --unfused-softmax-fp32, fusions/fused_softmax.py
  forward_torch_softmax: the softmax's fp32 output kept in the scores' place (stored_scores_bytes).
- [R] megatron/core/transformer/mlp.py and fusions/ (same commit), which the file does not cover: a gated MLP's
  fused SwiGLU (bias_activation_fusion, the default) saves its input, fc1's 2f-wide output (fused_bias_swiglu.py
  SwiGLUFunction.save_for_backward), and fc2 its f-wide input, the SwiGLU's output: 6 bytes per f a token where
  the file's GELU counts 4; each bias-dropout-add (fusions/fused_bias_dropout.py; a Mamba layer's too, mamba_layer.py)
  and the embedding's dropout (language_model_embedding.py) keep a 1-byte mask only where hidden dropout is on
  (torch's dropout returns its input at p = 0, keeping nothing; compiled, aten.dropout's decomposition clones it),
  where the file counts one after attention, one after the MLP and the embedding's always (dense_mlp_half_bytes,
  own_attention_half_bytes, dropout_mask_bytes).
- [C] megatron/core/transformer/transformer_layer.py and moe/moe_layer.py (same commit), which the file does not
  cover: selective recomputation's "mlp" checkpoints a dense layer's MLP on its input (tensor_parallel.checkpoint,
  te_checkpoint), under Transformer Engine the residual its norm-fused fc1 reads; "shared_experts" the shared
  experts on the pre-MLP norm's output, which the router keeps; "layernorm" runs the norms that are modules of their
  own (not IdentityOp: MLA's input norm, an MoE layer's pre-MLP norm) under CheckpointWithoutOutput, their output
  freed once read and re-made in the backward. The one layer whose backward re-runs them holds what they re-make.
- [K2] megatron/core/recompute.py (same commit), which the file does not cover: full recomputation's method block
  checkpoints the first recompute_num_layers layers of each model chunk's TransformerBlock and runs the others as
  without recomputation (_checkpointed_layers, _block_recompute_bytes); MTP modules skip it (multi_token_prediction.py:
  "not supported for MTP yet").
- [A2] Transformer Engine's ring attention (pytorch/attention/dot_product_attention/context_parallel.py
  AttnFuncWithCPAndKVP2P at d0067d0da), which the file does not cover: it corrects the output in fp32 over the ring's
  steps, then saves one 16-bit conversion of it (out_part) and returns another (out_f16), which linear_proj keeps:
  two copies of the context where attention without CP keeps one (ring_output_copy_bytes).
- [W] Transformer Engine transformer_engine/pytorch/module/base.py get_dummy_wgrad (NVIDIA/TransformerEngine at
  d0067d0da), which the file does not cover: under gradient-accumulation fusion (Megatron's default,
  --no-gradient-accumulation-fusion turns it off; TE's fuse_wgrad_accumulation) a TE linear layer's backward adds its
  weight gradient into main_grad within the GEMM and hands autograd a placeholder, one 16-bit tensor per distinct
  (shape, dtype), cached for the run (_dummy_wgrads); Megatron's DDP and Megatron-FSDP mark every parameter
  (grad_added_to_main_grad) so that each TE linear layer takes that path (dummy_wgrad_bytes). The cache came with
  TE ba5dc5dde (2025-04-08); Megatron's own output layer takes from it since e7c55de99e (2025-08-01).
- [D] --defer-embedding-wgrad-compute with --wgrad-deferral-limit N (megatron/core/tensor_parallel/layers.py and
  pipeline_parallel/schedules.py at d98e8a64dd), which the file does not cover: on the last stage the output layer
  (ColumnParallelLinear) appends its input to embedding_activation_buffer in the forward, and its backward appends
  the logits' gradient, cast to the input's 16-bit dtype, to grad_output_buffer in place of the weight-gradient
  GEMM, for the step's first N calls (0: all); finish_embedding_wgrad_compute runs their GEMMs after the pipeline
  flush (deferred_output_wgrad_bytes).
- [T] megatron/core/transformer/multi_latent_attention.py, moe/moe_layer.py and multi_token_prediction.py (same
  commit), where each stage's own view follows Megatron-Core and the file does not: MLA's down-projections
  (linear_q_down_proj, linear_kv_down_proj) and LatentMoE's projections are TELinear with parallel_mode
  "duplicated", whole on every TP rank, where the file splits MLA's over TP; each MTP module adds eh_proj (2h -> h,
  column-parallel) and three norms (enorm, hnorm, final_layernorm) to its layer, which the file leaves out
  (held_layers_parameters, mtp_stage_parameters). So are the linear layers' biases under add_bias_linear or
  add_qkv_bias (attention.py, mlp.py, moe/experts.py: layer_biases) and the first stage's learned position table
  under position_embedding_type learned_absolute, whole on every TP rank (language_model_embedding.py), which the
  file leaves out too.
- [L] Transformer Engine's linear layers under FP8 or NVFP4 matmuls (module/linear.py, layernorm_linear.py,
  grouped_linear.py at d0067d0da) and Megatron-Core's calls to them (same commit), which the file does not cover:
  each saves its input for the weight gradient quantized, one usage (low_precision_weights.saved_input_bytes), where
  bf16 saves two bytes; a norm-fused layer its norm's output, the norm's input staying bf16. Megatron asks for the
  bf16 input instead (set_save_original_input) where another op keeps it anyway under every recipe but delayed:
  attention's output for linear_proj (attention.py, multi_latent_attention.py), the pre-MLP norm's output, which
  the router keeps, for the shared experts' fc1 (shared_experts.py), and the discarded activation for the experts'
  fc2 under moe_act (experts.py); the SwiGLU functions keep their input, not their output (fused_bias_swiglu.py),
  so fc2's quantized input replaces the bf16 one (low_precision_input_savings).
- [P] --fp8-param-gather and --fp4-param-gather (megatron/training/arguments.py: "keep the compute param in fp8
  (fp4) (do not use any other intermediate dtype) and perform the param all-gather in fp8 (fp4)"; Transformer
  Engine's fp8_model_init), which the file does not cover: the decoder layers' TP-split and expert weights,
  Transformer Engine's linear layers, are stored in the low-precision format (low_precision_weights); norms,
  routers, the embedding and the head stay 16-bit, and so do the layers --first-last-layers-bf16 keeps in BF16
  (quantized_layer_parameters). With bf16 weights and FP8 or NVFP4 matmuls, Transformer Engine caches each such
  weight quantized beside it for the run (weight_cache_bytes), which the file does not count either.
- [U] megatron/core/utils.py GlobalMemoryBuffer (same commit), which the file does not cover: one tensor per name and
  dtype, kept for the run at the largest size asked for ("mpu"): the output layer's input gathered over TP under
  sequence parallelism (tensor_parallel/layers.py linear_with_grad_accumulation_and_async_allreduce), and the
  allgather dispatcher's tokens gathered over expert TP x EP (moe/token_dispatcher.py token_dispatch,
  use_global_buffer); global_buffer_bytes.

Two views, per GPU and in bytes:
- Megatron's (`parameters_on_most_loaded_shard`, `weight_and_optimizer_bytes`, `activation_bytes`, and
  `LayoutMemory.total`): the file's arithmetic term for term. 1/PP of the transformer block (fractional when PP does
  not divide the layers), the MTP block and one vocab x hidden matrix, over TP; routed experts over ETP x EP; weights
  and optimizer at 18 bytes, or 6 + 12/DP (6 + 12/expert-DP for experts) with the distributed optimizer; the first
  stage's activations. The total adds the most loaded shard's states to the first stage's activations, which can be
  two different stages (with MTP the last stage holds more parameters).
- Each stage's own (`stage_memory`, `LayoutMemory.most_loaded`): the layers that rank builds [B] (DeepSeek's dense
  layers and an uneven split land where they are), the embedding on the first stage, the head, final norm and MTP on
  the last, and the micro-batches that rank keeps [S]. Stage 0 of an even dense split is Megatron's figure but for
  the final norm, which the file spreads over the stages.

Departures from the file: CP, which the file ignores, splits the sequence (each rank's activations are of s / CP
tokens; with selective recomputation every term is linear in s). Full recomputation, which the file does not
price, keeps each layer's input [K] section 4 and holds one layer's activations while the backward re-runs it.
16-bit gradients (Megatron-Core's grad_reduce_in_fp32 off) take 2 bytes a parameter, not the file's 4. Each
stage's own view counts the last stage's logits at the loss's peak, 6 bytes a logit, and each MTP depth's loss
(vocab_parallel_loss_bytes), and keeps GQA's K and V at their own width where attention does not copy them to every
head, and attention's tensors at their own widths [A] (stage_activation_bytes' own_widths): Q and the context
heads x head dim wide, GQA's K and V narrower, MLA's wider and its latents, where the file has four h-wide tensors;
which the file does not and Megatron's own tests measure. Kept in
Megatron's view as the file has it, where Megatron-Core differs and each stage's own view follows it: the distributed
optimizer shards over DP (args.data_parallel_size), not DP x CP (Megatron-Core's intra_dp_cp_group,
megatron/core/optimizer/__init__.py; state_bytes); the first stage keeps p(1 + (p-1)/(pv)) micro-batches interleaved
even when m v is fewer (schedules.py caps it); the last stage with MTP and an untied head holds two vocab x
hidden matrices [G], the file counts one.
Each stage's own view also costs an MoE layer's MLP as Megatron-Core keeps it [E] (moe_mlp_half_bytes): its
top-k routed copies of the tokens, which the file costs as one dense MLP of ffn_hidden_size.
Left out by the file and so in Megatron's view: linear biases (GPT-3's) and learned position tables, which each
stage's own view holds [T] (layer_biases, ModelShape.position_table). Left out by the file and so here: query/key
norms, the attention-score term 5as/h (both formulas assume selective recomputation or a fused attention), MoE's
routed copies and attention's own widths (GQA's, MLA's) in Megatron's view,
communication buffers, fragmentation and the CUDA context.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

from dpcost.engine.activations import ACT_BYTES, mla_latent_tensors
from dpcost.engine.frameworks import MEGATRON_FSDP_PREFETCH_FLOOR
from dpcost.engine.layout import Layout
from dpcost.engine.layout_step import PipelineSplit, checkpointed_rank_layers, rank_layers, virtual_stage_layers
from dpcost.engine.loss import logit_peak_bytes
from dpcost.engine.low_precision_weights import QUANTIZED_WEIGHTS, saved_input_bytes
from dpcost.engine.memory import ADAM_MOMENT_BYTES
from dpcost.engine.muon import (
    Matrix,
    buffer_order,
    layer_matrices,
    layer_wise_padding,
    mtp_matrices,
    position_matrices,
    working_set_bytes,
)
from dpcost.engine.ops import sixteen_bit_layer
from dpcost.engine.params import latent_projections, mixer_parameters
from dpcost.frozen import frozen
from dpcost.specs import ModelArchitecture, ModelSpec

__all__ = [
    "AttentionWidths",
    "LayoutMemory",
    "MemoryLayout",
    "ModelShape",
    "ParamGroups",
    "StageMemory",
    "activation_bytes",
    "attention_parameters",
    "attention_width_bytes",
    "attention_widths",
    "bytes_per_parameter",
    "deferred_output_wgrad_bytes",
    "deferred_output_wgrad_calls",
    "embedding_activation_bytes",
    "embedding_parameters",
    "expert_data_parallel_size",
    "first_stage_microbatches",
    "fsdp_buffer_bytes",
    "fsdp_bytes_per_parameter",
    "full_recompute_layer_bytes",
    "global_buffer_bytes",
    "interleaved_memory_penalty",
    "korthikanti_layer_activation_bytes",
    "layer_activation_bytes",
    "layer_biases",
    "layernorm_parameters",
    "layout_memory",
    "layout_memory_for",
    "low_precision_input_savings",
    "low_precision_saved_bytes",
    "microbatches_in_flight",
    "mla_attention_parameters",
    "mlp_parameters",
    "model_shape",
    "mtp_block_parameters",
    "output_activation_bytes",
    "padded_vocab_size",
    "parameters_on_most_loaded_shard",
    "parameters_on_other_shards",
    "parameters_on_stage",
    "quantized_layer_parameters",
    "routed_expert_parameters",
    "router_parameters",
    "stage_activation_bytes",
    "stage_layers",
    "stage_memory",
    "state_bytes",
    "stored_scores_bytes",
    "transformer_block_parameters",
    "weight_and_optimizer_bytes",
    "weight_cache_bytes",
]

# Megatron's compute_activation_memory_without_sp: "buffer for optimizer and miscellaneous temporaries (5% overhead)".
WITHOUT_SP_OVERHEAD = 1.05


@frozen
class MemoryLayout(Layout):
    """A layout (engine/layout.py: its sizes, their checks) with the switches Megatron's memory formulas read."""

    virtual_stages: int = 1  # model chunks per pipeline rank; 1: not interleaved (Megatron's None)
    sequence_parallel: bool = False
    # --recompute-granularity: none, selective (Megatron's formula) or full (--recompute-method uniform,
    # --recompute-num-layers 1: every layer keeps only its input; not in Megatron's file)
    recompute: str = "selective"
    # 0: Megatron's DDP; 1: --use-distributed-optimizer, ZeRO-1 over DP (and expert-DP) [M]; 2, 3: Megatron-FSDP's
    # optim_grads and optim_grads_params over DP x CP (and expert-DP) [F]
    zero: int = 0
    # Megatron-Core DDP's gradient buffer (distributed/param_and_grad_buffer.py): fp32 with grad_reduce_in_fp32
    # (Megatron-LM's --bf16 default), else the parameters' 16-bit dtype (Megatron-Bridge's performance presets)
    grad_bytes: float = 4.0
    # DeepSpeed's BF16_Optimizer under Megatron-DeepSpeed (--grad-accum-dtype fp32): each backward's bf16 param.grad
    # kept beside its fp32 gradient buffer (bf16_optimizer.py; prepare.bf16_optimizer_states), from the step's
    # first backward to its zero_grad: a pipeline's 1F1B and accumulation hold them at their peaks
    lp_grad_bytes: float = 0.0
    first_stage_layers: int | None = None  # --decoder-first-pipeline-num-layers
    last_stage_layers: int | None = None  # --decoder-last-pipeline-num-layers
    pipeline_layout: str | None = None  # --pipeline-model-parallel-layout (pipeline_layout.py), checked by the caller
    # The s^2 attention scores are stored (no flash attention, no selective recomputation): Korthikanti et al.'s
    # 5as/(ht) per layer (Table 2), 2as/(ht) without attention dropout (stored_scores_bytes), which Megatron's
    # formula leaves out; under full recomputation, one layer's.
    attention_scores: bool = False
    scores_fp32: bool = False  # the stored scores' softmax ran unfused in fp32 [A] (--unfused-softmax-fp32)
    # --gather-dtype fp8 or nvfp4 (--fp8-param-gather, --fp4-param-gather): the layers' linear weights stored (and
    # gathered) in that format [P]; None: in bf16
    quantized_weights: str | None = None
    # the bytes Transformer Engine holds a low-precision layer's linear weight in (low_precision_weights
    # .held_weight_bytes): as the weight under quantized_weights, else as its cached copy; 0: BF16 matmuls
    quantized_weight_bytes: float = 0.0
    bf16_layers: tuple[int, int] = (0, 0)  # the first and last decoder layers kept in BF16 (--first-last-layers-bf16)
    # the MTP layers in low precision: FP8 yes (multi_token_prediction.py builds them under the FP8 context), NVFP4 no
    # ("currently ignoring FP4 in MTP layers")
    mtp_low_precision: bool = True
    # --fused-grouped-mlp: TE's fused grouped MLP (ops/fused/grouped_mlp.py) quantizes bf16 routed experts' weights
    # every forward and saves them for the backward, row- and column-wise, where its modules cache them for the run
    fused_experts: bool = False
    # --fp8-output-proj: the output layer's bf16 weight, cached quantized by TE (TELMHeadColumnParallelLinear, whose
    # forward passes is_first_microbatch) at these bytes a weight; 0: none
    output_weight_cache: float = 0.0
    # the matmuls' low-precision format (--compute-dtype fp8 or nvfp4; None: BF16) and FP8 recipe, for the inputs TE
    # saves for the backward [L]; whether attention saves its own output (flash and fused kernels do, unfused not)
    matmul_format: str | None = None
    fp8_recipe: str = "tensorwise"
    attention_keeps_output: bool = True
    # --cp-comm-type p2p: Transformer Engine's ring attention keeps a second 16-bit copy of its output [A2]
    cp_ring: bool = False
    # GPipe: every micro-batch's forward before any backward, so each stage holds all m micro-batches' activations
    # (Huang et al. 2019, section 2.3; torch.distributed.pipelining ScheduleGPipe), where 1F1B holds at most p
    all_forwards_first: bool = False
    # --overlap-moe-expert-parallel-comm: the interleaved warm-up runs one more forward, so that every 1F1B step's
    # forward and backward are independent (schedules.py get_pp_rank_microbatches)
    ep_overlap_warmup: bool = False
    microbatch_group: int | None = None  # --microbatch-group-size-per-virtual-pipeline-stage; None: PP (schedules.py)
    # selective recomputation's MoE module, which each stage's own view prices [E] (moe_mlp_half_bytes): "moe" (the
    # whole MoE forward), "moe_act" (the experts' activation) or "" (neither)
    moe_recompute: str = ""
    # selective recomputation's "mla_up_proj": Q, K, V and MLA's latents' norm outputs re-made in the backward [A]
    mla_recompute: bool = False
    # --recompute-block N: under full recomputation the first N layers of each model chunk alone [K2]; None: all
    recompute_block: int | None = None
    # selective recomputation's "mlp", "shared_experts" and "layernorm" (checkpointing.DROPPED_MODULES), whose
    # checkpoints keep their input alone [C]: each stage's own view drops what they re-make (dense_mlp_half_bytes,
    # moe_mlp_half_bytes, own_attention_half_bytes), and their matmuls' inputs save nothing quantized
    # (low_precision_input_savings)
    dropped_modules: frozenset[str] = frozenset()
    loss_impl: str = "vocab-parallel"  # the last stage's loss (loss.py): vocab-parallel, -fused (compiled) or -te
    workspaces: float = 0.0  # the GEMM libraries' workspaces (workspaces.py), held by every stage all step
    # --num-distributed-optimizer-instances: the distributed optimizer's states sharded within an instance of
    # DP x CP / N ranks (and expert-DP / N), N copies of them (state_bytes)
    optimizer_instances: int = 1
    grouped_workspaces: float = 0.0  # TE's grouped-GEMM workspaces (workspaces.py), on a stage holding MoE layers
    ep_dispatcher: str = "alltoall"  # the MoE token dispatcher: allgather gathers into the global buffer [U]
    # the output layer is Transformer Engine's (--fp8-output-proj: TELMHeadColumnParallelLinear, gpt_model.py),
    # which gathers its input under SP itself, not into the global buffer [U]
    te_output_layer: bool = False
    dummy_wgrads: bool = False  # TE's placeholder weight gradients under gradient-accumulation fusion [W]
    # the output layer's weight-gradient GEMMs deferred to the pipeline flush for the step's first N calls (0: all):
    # --defer-embedding-wgrad-compute --wgrad-deferral-limit N [D]; None: computed in each backward
    wgrad_deferral: int | None = None
    # --optimizer muon: one momentum where Adam keeps two, on the weight matrices Muon orthogonalizes (muon.py;
    # state_bytes)
    muon: bool = False
    # Megatron's bucket_size in elements (--overlap-grad-reduce: training.py resolve_ddp_bucket_size), by which its
    # layer-wise layout cuts the first stage's first model chunk (muon_padding_bytes); None: one bucket
    muon_bucket: float | None = None
    # --no-grouped-gemm: SequentialMLP registers each expert's fc1 and fc2 together, which orders that layout's buffer
    sequential_experts: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.virtual_stages < 1:
            raise ValueError(f"virtual_stages must be a positive integer, got {self.virtual_stages}")
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError("virtual_stages > 1 needs pipeline parallelism (pp > 1)")
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"zero must be 0, 1, 2 or 3, got {self.zero}")
        if self.recompute not in ("none", "selective", "full"):
            raise ValueError(f"recompute must be none, selective or full, got {self.recompute!r}")
        if self.loss_impl not in ("vocab-parallel", "vocab-parallel-fused", "vocab-parallel-te"):
            raise ValueError(
                f"loss_impl must be vocab-parallel, vocab-parallel-fused or vocab-parallel-te, got {self.loss_impl!r}"
            )
        if self.moe_recompute not in ("", "moe", "moe_act"):
            raise ValueError(f"moe_recompute must be moe, moe_act or empty, got {self.moe_recompute!r}")
        if self.wgrad_deferral is not None and (self.wgrad_deferral < 0 or self.pp == 1):
            raise ValueError("wgrad_deferral needs pipeline parallelism and a limit of 0 (all) or more")
        if self.quantized_weights is not None and self.quantized_weights not in QUANTIZED_WEIGHTS:
            raise ValueError(f"quantized_weights must be fp8 or nvfp4, got {self.quantized_weights!r}")
        if self.quantized_weights is not None and self.quantized_weight_bytes <= 0:
            raise ValueError("quantized_weights needs the bytes a quantized weight is held in (quantized_weight_bytes)")

    def pipeline_split(self, layers: int) -> PipelineSplit:
        """How `layers` decoder layers split over this layout's pipeline (layout_step.PipelineSplit)."""
        return PipelineSplit(layers, self.pp, self.virtual_stages, self.first_stage_layers, self.last_stage_layers,
                             self.pipeline_layout)  # fmt: skip

    @property
    def distributed_optimizer(self) -> bool:
        """Optimizer states sharded over DP: the distributed optimizer, or Megatron-FSDP [M], [F]."""
        return self.zero >= 1

    @property
    def quantized_weight_saving(self) -> float:
        """Bytes a quantized linear weight saves against bf16's two [P] (negative where its two usages hold more:
        MXFP8's scales); 0 without --gather-dtype fp8 or nvfp4."""
        return 0.0 if self.quantized_weights is None else 2.0 - self.quantized_weight_bytes

    @property
    def sp_split(self) -> bool:
        """Activations split over TP by SP: the file's SP formulas [M] (report_theoretical_memory, written for
        selective recomputation), whatever the recomputation: SP splits the layer-norm and dropout tensors whether or
        not the attention scores are kept, which stored_scores_bytes adds apart ([K] Table 2: sbh(34/t + 5as/(ht))
        with SP and no recomputation); with full [K] section 4. No SP at TP 1 (training/arguments.py)."""
        return self.sequence_parallel and self.tp > 1


@frozen
class ParamGroups:
    """Parameters as a rank holds them, the file's three groups: split over TP, replicated, split over ETP x EP."""

    tp_sharded: float = 0.0
    replicated: float = 0.0
    expert_sharded: float = 0.0

    def __add__(self, other: ParamGroups) -> ParamGroups:
        return ParamGroups(
            self.tp_sharded + other.tp_sharded,
            self.replicated + other.replicated,
            self.expert_sharded + other.expert_sharded,
        )

    def scaled(self, k: float) -> ParamGroups:
        return ParamGroups(self.tp_sharded * k, self.replicated * k, self.expert_sharded * k)

    @property
    def total(self) -> float:
        return self.tp_sharded + self.replicated + self.expert_sharded

    def per_gpu(self, layout: Layout) -> ParamGroups:
        """One rank's share: TP-sharded over TP, experts over ETP x EP, the rest whole [M]."""
        return ParamGroups(
            self.tp_sharded / layout.tp, self.replicated, self.expert_sharded / (layout.expert_tp * layout.ep)
        )


NO_PARAMETERS = ParamGroups()  # shared: ParamGroups are frozen


@frozen
class ModelShape:
    """The numbers Megatron's formulas read, by its argument names: what `model_shape` maps a spec into."""

    hidden: int  # hidden_size
    layers: int  # num_layers
    ffn: int  # ffn_hidden_size, which the activation formulas use for every layer
    vocab: int  # padded_vocab_size
    dense_layer: ParamGroups  # one layer with a dense MLP
    moe_layer: ParamGroups  # one layer with the MoE MLP
    moe_pattern: tuple[bool, ...]  # moe_layer_freq as a list: layer i has the MoE MLP
    final_layernorm: float
    untied: bool  # untie_embeddings_and_output_weights
    mtp_layers: int = 0  # mtp_num_layers
    heads: int = 0  # num_attention_heads: only the stored attention scores read it
    # dropout > 0, one probability for the scores and the hidden states (the engine's convention): the scores'
    # dropout keeps its mask and output (stored_scores_bytes), each bias-dropout-add its mask (dropout_mask_bytes)
    dropout: bool = True
    # attention's tensors per token at their own widths [A] (attention_width_bytes); 0: hidden. Q: heads x its head
    # dim (MLA: qk_head_dim + qk_pos_emb_head_dim); K and V: num_query_groups x kv_channels (MLA: every head's);
    # the context: heads x V's head dim
    query_width: int = 0
    key_width: int = 0
    value_width: int = 0
    context_width: int = 0
    kv_groups: int = 0  # num_query_groups (MLA: heads): a TP rank keeps at least one group's K and V
    latent_bytes: float = 0.0  # MLA's latents per token (activations.mla_latent_tensors), held per sequence shard
    latent_recomputed_bytes: float = 0.0  # those of them recompute_modules "mla_up_proj" drops
    # a hybrid's layers, which the file does not cover [H]: each layer's parameters and its (mixer, MLP) kind, and
    # the Mamba mixer's (inner width, heads, groups, state) its activations read
    hybrid_layers: tuple[ParamGroups, ...] = ()
    hybrid_kinds: tuple[tuple[str, str, int], ...] = ()
    mamba: tuple[int, int, int, int] = (0, 0, 0, 0)
    # an MoE layer's MLP as Megatron-Core keeps it [E] (moe_mlp_half_bytes): num_moe_experts, moe_router_topk,
    # moe_ffn_hidden_size, the shared experts' width (moe_shared_expert_intermediate_size) and a routed copy's
    # width (hidden, or LatentMoE's latent); no MoE at moe_topk 0
    moe_experts: int = 0
    moe_topk: int = 0
    moe_ffn: int = 0
    moe_shared_ffn: int = 0
    moe_io: int = 0
    gated_mlp: bool = False  # gated MLPs, dense and expert: fc1 is 2 x ffn wide (what the fused SwiGLU keeps) [R]
    # Transformer Engine's linear layers by part of a layer [W], each weight (out_features, in_features, split):
    # "column" splits out over TP, "row" in over TP, "expert_column" and "expert_row" over expert TP, "whole" none
    linears: tuple[tuple[str, tuple[tuple[int, int, str], ...]], ...] = ()
    # of those, the weights whole on every TP rank [T]: an attention layer's (MLA's down-projections) and an MoE
    # layer's (LatentMoE's projections)
    duplicated_attention: float = 0.0
    duplicated_moe: float = 0.0
    mla_latents: int = 0  # MLA's up-projections' inputs per token, q_lora_rank + kv_lora_rank; 0 without MLA
    # what the file leaves out and Megatron-Core builds [T]: a dense and an MoE layer's linear biases (layer_biases)
    # and the first stage's learned position table (max_position_embeddings x hidden, whole on every TP rank)
    dense_biases: ParamGroups = NO_PARAMETERS
    moe_biases: ParamGroups = NO_PARAMETERS
    position_table: float = 0.0
    # under Muon, the weights it orthogonalizes (muon.py): each layer's, one MTP module's and a learned position
    # table's; none under Adam
    muon_layers: tuple[tuple[Matrix, ...], ...] = ()
    muon_mtp: tuple[Matrix, ...] = ()
    muon_positions: tuple[Matrix, ...] = ()

    def __post_init__(self) -> None:
        if len(self.moe_pattern) != self.layers:
            raise ValueError(f"moe_pattern has {len(self.moe_pattern)} entries for {self.layers} layers")

    def layer(self, i: int) -> ParamGroups:
        if self.hybrid_layers:
            return self.hybrid_layers[i]
        return self.moe_layer if self.moe_pattern[i] else self.dense_layer

    def layers_parameters(self, layers: Sequence[int]) -> ParamGroups:
        """The parameters of `layers` (indices) by group [M], each hybrid layer its own [H]."""
        if self.hybrid_layers:
            return sum((self.hybrid_layers[i] for i in layers), ParamGroups())
        moe = sum(1 for i in layers if self.moe_pattern[i])
        return self.dense_layer.scaled(len(layers) - moe) + self.moe_layer.scaled(moe)

    def moe_layers(self, layers: Sequence[int]) -> int:
        """How many of `layers` have the MoE MLP."""
        if not self.moe_topk:
            return 0
        if self.hybrid_kinds:
            return sum(1 for i in layers if self.hybrid_kinds[i][1] == "moe")
        return sum(1 for i in layers if self.moe_pattern[i])

    def attends(self, i: int) -> bool:
        """Whether layer i has attention: every layer of a transformer, a hybrid's attention layers [H]."""
        return not self.hybrid_kinds or "attention" in self.hybrid_kinds[i][0]

    def held_layers_parameters(self, layers: Sequence[int]) -> ParamGroups:
        """The parameters of `layers` as each rank holds them: the file's groups (layers_parameters) with MLA's
        down-projections whole on every TP rank, where the file splits them [T]."""
        groups = self.layers_parameters(layers)
        if not self.duplicated_attention:
            return groups
        moved = self.duplicated_attention * sum(1 for i in layers if self.attends(i))
        return ParamGroups(groups.tp_sharded - moved, groups.replicated + moved, groups.expert_sharded)

    def duplicated_linears(self, layers: Sequence[int]) -> float:
        """The Transformer Engine linear weights of `layers` duplicated over TP [T]: MLA's down-projections in each
        attention layer, LatentMoE's projections in each MoE layer."""
        if not self.duplicated_attention and not self.duplicated_moe:
            return 0.0
        moe = (lambda i: self.hybrid_kinds[i][1] == "moe") if self.hybrid_kinds else self.moe_pattern.__getitem__
        return sum(self.duplicated_attention * self.attends(i) + self.duplicated_moe * moe(i) for i in layers)


# ----------------------------------------------------------------------------------------------- parameters


VOCAB_DIVISIBLE_BY = 128  # Megatron's --make-vocab-size-divisible-by default (megatron/training/arguments.py)


def padded_vocab_size(vocab: int, tp: int, divisible_by: int = VOCAB_DIVISIBLE_BY) -> int:
    """The vocabulary padded to a multiple of divisible_by x TP [V] (_calculate_padded_vocab_size_cached)."""
    multiple = divisible_by * tp
    return math.ceil(vocab / multiple) * multiple


def attention_parameters(hidden: int, heads: int, query_groups: int, kv_channels: int) -> float:
    """Q, K, V and output projections without biases [M] (compute_weight_and_optimizer_memory, self_attn_term)."""
    query_projection_size = kv_channels * heads
    return 2 * hidden * hidden * ((1 + query_groups / heads) * (query_projection_size / hidden))


def mla_attention_parameters(
    hidden: int,
    heads: int,
    q_lora_rank: int | None,
    kv_lora_rank: int,
    qk_head_dim: int,
    qk_pos_emb_head_dim: int,
    v_head_dim: int,
    norm_size: int,
) -> float:
    """Multi-latent attention with its LoRA norms [M] (compute_weight_and_optimizer_memory, self_attn_term of MLA)."""
    if q_lora_rank is None:
        q_term = hidden * heads * (qk_head_dim + qk_pos_emb_head_dim)
    else:
        q_term = q_lora_rank * (hidden + heads * (qk_head_dim + qk_pos_emb_head_dim) + norm_size)
    kv_term = kv_lora_rank * (hidden + heads * (qk_head_dim + v_head_dim) + norm_size) + hidden * qk_pos_emb_head_dim
    return float(q_term + kv_term + heads * v_head_dim * hidden)


def mlp_parameters(hidden: int, ffn: int, gated: bool) -> float:
    """A dense (or shared-expert) MLP, x 3/2 when gated [M] (dense_mlp_params, shared_expert_params)."""
    return 2 * hidden * ffn * (3 / 2 if gated else 1)


def routed_expert_parameters(hidden: int, moe_ffn: int, experts: int, gated: bool) -> float:
    """All routed experts of one MoE layer [M] (routed_expert_params)."""
    return 2 * hidden * moe_ffn * experts * (3 / 2 if gated else 1)


def router_parameters(hidden: int, experts: int, bias: bool) -> float:
    """The router, with a bias when add_bias_linear [M] (router_params)."""
    return float(hidden * experts + (experts if bias else 0))


def layernorm_parameters(hidden: int, norm_size: int) -> float:
    """A layer's two norms, 1 (RMSNorm) or 2 (LayerNorm) vectors each [M] (layernorm_params)."""
    return float(2 * hidden * norm_size)


def embedding_parameters(hidden: int, padded_vocab: int) -> float:
    """One vocab x hidden matrix, the embedding or the untied output head [M] (embedding_size)."""
    return float(hidden * padded_vocab)


def transformer_block_parameters(shape: ModelShape) -> ParamGroups:
    """All layers and the final norm by group [M] (*_params_in_transformer_block)."""
    return shape.layers_parameters(range(shape.layers)) + ParamGroups(0, shape.final_layernorm)


def mtp_block_parameters(shape: ModelShape) -> ParamGroups:
    """The MTP layers, MoE when the last layer is [M] (*_params_in_mtp_block)."""
    if not shape.mtp_layers:
        return ParamGroups()
    return shape.layer(shape.layers - 1).scaled(shape.mtp_layers)


def mtp_stage_parameters(shape: ModelShape) -> ParamGroups:
    """The MTP modules as the last stage holds them [T]: each a layer of the last layer's kind as each rank holds it
    (held_layers_parameters), its eh_proj (2h -> h, split over TP) and its enorm, hnorm and final_layernorm."""
    if not shape.mtp_layers:
        return ParamGroups()
    layer = shape.held_layers_parameters((shape.layers - 1,))
    module = layer + ParamGroups(2.0 * shape.hidden * shape.hidden, 3 * shape.final_layernorm)
    return module.scaled(shape.mtp_layers)


def parameters_on_most_loaded_shard(shape: ModelShape, layout: MemoryLayout) -> ParamGroups:
    """Per GPU: 1/PP of the block, MTP, one embedding (two untied at PP 1) [M] (*_on_most_loaded_shard)."""
    block, mtp = transformer_block_parameters(shape), mtp_block_parameters(shape)
    embedding = embedding_parameters(shape.hidden, shape.vocab)
    pp = layout.pp
    tp_sharded = (block.tp_sharded / pp + mtp.tp_sharded + embedding) / layout.tp
    replicated = block.replicated / pp + mtp.replicated
    expert_sharded = (block.expert_sharded / pp + mtp.expert_sharded) / (layout.expert_tp * layout.ep)
    if shape.untied and pp == 1:
        tp_sharded += embedding / layout.tp
    return ParamGroups(tp_sharded, replicated, expert_sharded)


def muon_chunks(shape: ModelShape, layout: MemoryLayout, stage: int, layers: tuple[int, ...]) -> list[list[Matrix]]:
    """The matrices Muon orthogonalizes on a stage (ModelShape.muon_layers), model chunk by model chunk (its virtual
    stages, _chunk_layers), the MTP modules in the last stage's last chunk and a learned position table in the first
    stage's first; none under Adam."""
    if not layout.muon or not shape.muon_layers:
        return []
    counts = _chunk_layers(shape, layout, stage) or (len(layers),)
    ordered = sorted(layers)
    chunks, start = [], 0
    for n in counts:
        chunks.append([m for i in ordered[start : start + n] for m in shape.muon_layers[i]])
        start += n
    if stage == 0:  # the position table sits in the embedding, before the first layer
        chunks[0] = [*shape.muon_positions, *chunks[0]]
    if stage == layout.pp - 1:
        chunks[-1] += [m for _ in range(shape.mtp_layers) for m in shape.muon_mtp]
    return chunks


def muon_on_stage(shape: ModelShape, layout: MemoryLayout, stage: int, layers: tuple[int, ...]) -> ParamGroups:
    """Per GPU: the weights of a stage that Muon orthogonalizes (muon_chunks); none under Adam."""
    if not layout.muon:
        return NO_PARAMETERS
    return muon_groups(m for chunk in muon_chunks(shape, layout, stage, layers) for m in chunk).per_gpu(layout)


def muon_padding_bytes(shape: ModelShape, layout: MemoryLayout, stage: int, layers: tuple[int, ...]) -> float:
    """Under Muon's layer-wise distributed optimizer (ZeRO 1), what its layout's padding adds to a stage's gradient
    and bf16 parameter buffers (muon.layer_wise_padding): each model chunk's dense matrices over DP x CP, its
    experts' over expert-DP, as this GPU holds them; the first stage's first chunk in buckets of
    MemoryLayout.muon_bucket (training.py gives the other chunks, and the other stages, one bucket). Without EP, and
    with the experts split over TP alone, Megatron-Core leaves them allreduce (transformer_engine.py
    _set_expert_parameter_attributes at d98e8a64dd): they share the dense matrices' buffer."""
    if layout.zero != 1 or not layout.muon:
        return 0.0
    shared = layout.ep == 1 and layout.expert_tp == layout.tp
    sequential = layout.sequential_experts
    padded = 0.0
    for k, chunk in enumerate(muon_chunks(shape, layout, stage, layers)):
        bucket = layout.muon_bucket if stage == 0 and k == 0 else None
        dense = buffer_order((m for m in chunk if shared or not m.expert), layout.tp, sequential=sequential)
        padded += layer_wise_padding(dense, layout.dp * layout.cp, bucket)
        if not shared:
            experts = buffer_order((m for m in chunk if m.expert), layout.expert_tp, layout.ep, sequential)
            padded += layer_wise_padding(experts, expert_data_parallel_size(layout), bucket)
    return (layout.grad_bytes + 2) * padded


def muon_step_bytes(shape: ModelShape, layout: MemoryLayout, stage: int, layers: tuple[int, ...]) -> float:
    """What a stage's optimizer step allocates while it orthogonalizes its largest matrix (muon.working_set_bytes,
    TP-split ones gathered whole first); none under Adam."""
    if not layout.muon:
        return 0.0
    return working_set_bytes((m for chunk in muon_chunks(shape, layout, stage, layers) for m in chunk), layout.tp)


def parameters_on_other_shards(shape: ModelShape, layout: MemoryLayout) -> float:
    """Per GPU on a stage without embedding or MTP: 1/PP of the block [M] (num_parameters_on_other_model_shards)."""
    return transformer_block_parameters(shape).scaled(1 / layout.pp).per_gpu(layout).total


def stage_layers(split: PipelineSplit) -> tuple[tuple[int, ...], ...]:
    """The layer indices each pipeline rank builds [B] (layout_step.rank_layers: get_layer_id_list), where
    Megatron's formula takes PP to divide the layers unless the end stages' are given."""
    layers, pp = split.layers, split.pp
    even = split.virtual_stages == 1 and split.first_stage_layers is None and split.last_stage_layers is None
    if even and split.pipeline_layout is None and layers % pp:
        raise ValueError(
            f"{layers} layers do not split over {pp} pipeline stages; give the first and last stages' layers "
            "(Megatron's --decoder-first/last-pipeline-num-layers)"
        )
    return rank_layers(split)


def parameters_on_stage(shape: ModelShape, layout: MemoryLayout, stage: int, layers: tuple[int, ...]) -> ParamGroups:
    """Per GPU: a stage's layers, embedding on the first, head, final norm, MTP on the last [M] groups, [B], [G], as
    Megatron-Core holds them [T]."""
    held = shape.held_layers_parameters(layers) if shape.duplicated_attention else shape.layers_parameters(layers)
    if shape.dense_biases.total or shape.moe_biases.total:
        moe = shape.moe_layers(layers)
        held += shape.dense_biases.scaled(len(layers) - moe) + shape.moe_biases.scaled(moe)
    embedding = embedding_parameters(shape.hidden, shape.vocab)
    last = layout.pp - 1
    if stage == 0:
        held += ParamGroups(embedding, shape.position_table)
    if stage == last:
        held += ParamGroups(0, shape.final_layernorm) + mtp_stage_parameters(shape)
        if layout.pp > 1 or shape.untied:
            held += ParamGroups(embedding)  # the head, or at PP > 1 the last stage's copy of a tied embedding
        if layout.pp > 1 and shape.untied and shape.mtp_layers:
            held += ParamGroups(embedding)  # MTP's own embedding on the last stage [G]
    return held.per_gpu(layout)


# ----------------------------------------------------------------------------------------------- optimizer


def bytes_per_parameter(distributed_optimizer: bool, data_parallel_size: int, grad_bytes: float = 4.0) -> float:
    """bf16 weights, fp32 grads, master weights, Adam: 18, or 6 + 12/DP sharded [M] (num_bytes_per_parameter);
    16-bit gradients take 2 bytes off either."""
    held = 2 + grad_bytes
    return held + 12 / data_parallel_size if distributed_optimizer else held + 12


def expert_data_parallel_size(layout: MemoryLayout) -> int:
    """GPUs / (ETP x EP x PP) [M] (expert_data_parallel_size), megatron/core/parallel_state.py's expert grid."""
    return layout.gpus // (layout.expert_tp * layout.ep * layout.pp)


def fsdp_bytes_per_parameter(zero: int, shards: int, grad_bytes: float) -> tuple[float, float, float]:
    """Weights, gradients and optimizer per parameter under Megatron-FSDP [F]: bf16 weights (whole at ZeRO 2,
    sharded at 3), the sharded main gradient, and fp32 main weights and Adam's two moments (12 bytes) sharded."""
    return (2 / shards if zero == 3 else 2.0), grad_bytes / shards, 12 / shards


def quantized_layer_parameters(
    shape: ModelShape, layout: MemoryLayout, layers: tuple[int, ...], mtp: bool = False
) -> ParamGroups:
    """Per GPU: the parameters Transformer Engine holds in a low-precision format [P], stored so under
    --fp8-param-gather or --fp4-param-gather or cached beside bf16 weights (weight_cache_bytes): the TP-split,
    duplicated [T] and expert weights of `layers` but those kept in BF16 (ops.sixteen_bit_layer), and of the MTP
    layers with `mtp` under FP8 (built under its context whatever their index, but not under FP4:
    multi_token_prediction.py, layout.mtp_low_precision); none with BF16 matmuls."""
    if layout.quantized_weight_bytes <= 0:
        return NO_PARAMETERS
    if any(layout.bf16_layers):
        layers = tuple(i for i in layers if not sixteen_bit_layer(i, shape.layers, layout.bf16_layers))
    blocks = shape.held_layers_parameters(layers)
    quantized = ParamGroups(blocks.tp_sharded, shape.duplicated_linears(layers), blocks.expert_sharded)
    if mtp and shape.mtp_layers and layout.mtp_low_precision:
        module = mtp_stage_parameters(shape).scaled(1 / shape.mtp_layers)
        last = (shape.layers - 1,)
        quantized += ParamGroups(module.tp_sharded, shape.duplicated_linears(last), module.expert_sharded).scaled(
            shape.mtp_layers
        )
    return quantized.per_gpu(layout)


def weight_cache_bytes(layout: MemoryLayout, low_precision: ParamGroups) -> float:
    """Transformer Engine's cached quantized copies of a stage's bf16 linear weights under FP8 or NVFP4 matmuls,
    held for the run (module/linear.py `_fp8_workspaces`, refreshed at each step's first micro-batch: Megatron-Core
    passes is_first_microbatch): `low_precision` (quantized_layer_parameters) at the bytes a weight is held in
    (layout.quantized_weight_bytes), but the routed experts under --fused-grouped-mlp, whose fused op caches nothing
    (fused_expert_weight_bytes); none where the weights are stored quantized (--fp8-param-gather: the matmuls read
    them) or the matmuls run in BF16."""
    if layout.quantized_weights is not None or not layout.quantized_weight_bytes:
        return 0.0
    cached = low_precision.total - (low_precision.expert_sharded if layout.fused_experts else 0.0)
    return layout.quantized_weight_bytes * cached


def fused_expert_weight_bytes(layout: MemoryLayout, low_precision: ParamGroups, copies: float) -> float:
    """The routed experts' weights TE's fused grouped MLP saves for the backward (ops/fused/grouped_mlp.py at
    d0067d0da: bf16 weights quantized each forward with both usages and passed to save_for_backward), `copies` of
    them: one per micro-batch in flight whose MoE layers are not recomputed; none where the weights are stored
    quantized, which it reads as they are."""
    if not layout.fused_experts or layout.quantized_weights is not None:
        return 0.0
    return layout.quantized_weight_bytes * low_precision.expert_sharded * copies


def output_weight_cache_bytes(shape: ModelShape, layout: MemoryLayout) -> float:
    """--fp8-output-proj: TE's cached MXFP8 copy of the last stage's output layer, vocab / TP x hidden weights
    (gpt_model.py builds TELMHeadColumnParallelLinear outside the FP8 parameter context, bf16; extensions/
    transformer_engine.py: its forward is TELinear's, which passes is_first_microbatch)."""
    return layout.output_weight_cache * shape.vocab * shape.hidden / layout.tp


def state_bytes(
    held: ParamGroups, layout: MemoryLayout, quantized: ParamGroups | None = None, muon: ParamGroups | None = None
) -> tuple[float, float, float]:
    """A rank's weights, gradients and optimizer states, bytes each, as Megatron-Core shards them: the dense
    parameters' over DP x CP (the distributed optimizer's intra_dp_cp_group, megatron/core/optimizer/__init__.py,
    where the file [M] divides by DP; Megatron-FSDP's at ZeRO 2-3 [F]), the experts' over expert-DP [M], each
    within one of `optimizer_instances` (parallel_state.py intra_partial_dp_ranks_with_cp); `quantized` of the
    weights (quantized_layer_parameters) in their low-precision format instead of bf16's two bytes [P]; `muon` of
    them (muon_groups, per GPU) with Muon's one fp32 momentum where Adam keeps two (memory.optimizer_state_bytes),
    sharded as the rest (Megatron's layer-wise distributed optimizer gives each rank whole matrices: as many bytes,
    unevenly)."""
    quantized = quantized or NO_PARAMETERS
    saving = layout.quantized_weight_saving
    dense, experts = held.tp_sharded + held.replicated, held.expert_sharded
    dense_ranks, expert_ranks = layout.dp * layout.cp, expert_data_parallel_size(layout)
    n = layout.optimizer_instances if layout.zero == 1 else 1
    kept = 0.0  # the moment Muon does not keep, sharded as the states are
    if muon is not None:
        kept = ADAM_MOMENT_BYTES * (
            (muon.tp_sharded + muon.replicated) / (dense_ranks // n if layout.zero else 1)
            + muon.expert_sharded / (expert_ranks // n if layout.zero else 1)
        )
    if layout.zero >= 2:
        d = fsdp_bytes_per_parameter(layout.zero, dense_ranks, layout.grad_bytes)
        e = fsdp_bytes_per_parameter(layout.zero, expert_ranks, layout.grad_bytes)
        q_dense, q_experts = quantized.tp_sharded + quantized.replicated, quantized.expert_sharded
        weights = (dense - q_dense * saving / 2) * d[0] + (experts - q_experts * saving / 2) * e[0]
        return weights, dense * d[1] + experts * e[1], dense * d[2] + experts * e[2] - kept
    grad_bytes = layout.grad_bytes + layout.lp_grad_bytes
    per_dense = bytes_per_parameter(layout.distributed_optimizer, dense_ranks // n, grad_bytes)
    per_expert = bytes_per_parameter(layout.distributed_optimizer, expert_ranks // n, grad_bytes)
    total = dense * per_dense + experts * per_expert
    weights, grads = 2 * held.total, grad_bytes * held.total
    return weights - saving * quantized.total, grads, total - weights - grads - kept


def weight_and_optimizer_bytes(held: ParamGroups, layout: MemoryLayout) -> float:
    """A rank's weights, grads and optimizer, the experts' over expert-DP [M] (weight_and_optimizer_memory); at
    ZeRO 2-3, Megatron-FSDP's shards [F] (state_bytes)."""
    if layout.zero >= 2:
        return sum(state_bytes(held, layout))
    grad_bytes = layout.grad_bytes + layout.lp_grad_bytes
    dense = bytes_per_parameter(layout.distributed_optimizer, layout.dp, grad_bytes)
    experts = bytes_per_parameter(layout.distributed_optimizer, expert_data_parallel_size(layout), grad_bytes)
    return (held.tp_sharded + held.replicated) * dense + held.expert_sharded * experts


def fsdp_buffer_bytes(shape: ModelShape, layout: MemoryLayout, stage: int, layers: tuple[int, ...]) -> float:
    """The unsharded buffers Megatron-FSDP holds on one GPU of `stage` at its peak [F]: one unit's (decoder layer's)
    unsharded gradient before its reduce-scatter (ZeRO 2-3); at ZeRO 3 also the modules in no unit, gathered and kept
    (the embedding, output layer, final norm: AllGatherPipeline.reset marks them PRESERVED), and the unit computing
    with those prefetched behind it until max(1e9, 2 x the mean unit's elements) / 2 elements are gathered
    (megatron_fsdp.py suggested_communication_unit_size; param_and_grad_buffer.py all_gather_params)."""
    if layout.zero < 2 or not layers:
        return 0.0
    units = [shape.held_layers_parameters((i,)).per_gpu(layout).total for i in layers]
    largest, mean = max(units), sum(units) / len(units)
    unsharded_grad = layout.grad_bytes * largest
    if layout.zero == 2:
        return unsharded_grad
    held = parameters_on_stage(shape, layout, stage, layers).total
    outside = held - sum(units)
    prefetch = max(MEGATRON_FSDP_PREFETCH_FLOOR, mean)  # max(1e9, 2 x mean) // 2 elements
    gathered = min(len(units), 1 + math.ceil(prefetch / mean)) if mean > 0 else 0
    biggest = max(layers, key=lambda i: shape.held_layers_parameters((i,)).per_gpu(layout).total)
    unit_bytes = (
        2 * largest - layout.quantized_weight_saving * quantized_layer_parameters(shape, layout, (biggest,)).total
    )
    return unsharded_grad + 2 * outside + gathered * unit_bytes


# ----------------------------------------------------------------------------------------------- activations


def korthikanti_layer_activation_bytes(
    seq: float, micro_batch: int, hidden: int, heads: int, tp: int, sequence_parallel: bool, selective: bool
) -> float:
    """One layer per GPU [K] Table 2: sbh(10 + 24/t + 5as/ht), sbh(34/t + 5as/ht) with SP; selective drops 5as/ht."""
    sbh = seq * micro_batch * hidden
    scores = 0.0 if selective else 5 * heads * seq / (hidden * tp)
    return sbh * ((34 / tp if sequence_parallel else 10 + 24 / tp) + scores)


def layer_activation_bytes(seq: float, micro_batch: int, hidden: int, ffn: int, tp: int, sp_split: bool) -> float:
    """One layer per GPU: sbh(18 + 4f/h)/t with SP and selective, else sbh(10 + 24/t) [M]; [K] Table 2 at f = 4h."""
    sbh = seq * micro_batch * hidden
    if sp_split:
        return sbh * (18 + 4 * (ffn / hidden)) / tp
    return sbh * (10 + 24 / tp)


def stored_scores_bytes(shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int) -> float:
    """One attention layer's stored s x s scores where nothing drops them [K] Table 2: sbh x 5as/(ht), the softmax's
    output (2), its dropout's mask (1) and output (2); without attention dropout the softmax's output alone, which
    the matmul with V keeps (torch's dropout returns its input at p = 0): sbh x 2as/(ht). Else none. An unfused
    fp32 softmax [A] keeps its fp32 output (4) in place of the 16-bit one, and without dropout the matmul with V
    keeps the 16-bit cast (2) besides: 7 and 6."""
    if not layout.attention_scores:
        return 0.0
    per_score = (5 if shape.dropout else 2) + (0 if not layout.scores_fp32 else 2 if shape.dropout else 4)
    return per_score * shape.heads * seq * seq * micro_batch / layout.tp


def attention_width_bytes(
    shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int, recomputed: bool = False
) -> float:
    """One attention layer's Q, K, V and context at their own widths, and MLA's latents, beyond [K] Table 2's four
    h-wide tensors (8sbh/t), which the file and attention_half_bytes count [A]: 2sb(q + k + v + c)/t, a TP rank
    keeping at least one query group's K and V (attention.py: with fewer groups than ranks each keeps one), both
    copied to every head where unfused attention keeps its scores (dot_product_attention.py repeat_interleave); MLA's
    latents per sequence shard (its down-projections are duplicated over TP: split only with SP). `recomputed`
    (recompute_modules "mla_up_proj"): Q, K, V and the latents' norm outputs go, re-made in the backward."""
    sb, h, tp = seq * micro_batch, shape.hidden, layout.tp
    groups = shape.kv_groups or shape.heads or 1
    copies = shape.heads / groups if layout.attention_scores and shape.heads > groups else 1.0
    kv_ranks = min(tp, groups) if copies == 1.0 else tp
    query, context = float(shape.query_width or h), float(shape.context_width or h)
    key_value = ((shape.key_width or h) + (shape.value_width or h)) * copies / kv_ranks
    latent = shape.latent_bytes
    if recomputed and latent:  # plain attention runs no up-projection: the module is MLA's alone
        query = key_value = 0.0
        latent -= shape.latent_recomputed_bytes
    heads = 2 * (query / tp + key_value + context / tp) - 8 * h / tp
    return sb * (heads + latent / (tp if layout.sp_split else 1))


def ring_output_copy_bytes(shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int) -> float:
    """The second copy of attention's output Transformer Engine's ring attention keeps [A2]: 2c bytes a token of the
    rank's s / CP over TP, where it keeps its output (flash or fused kernels, core attention not recomputed); none
    without the ring."""
    if not layout.cp_ring or not layout.attention_keeps_output:
        return 0.0
    return 2 * seq * micro_batch * (shape.context_width or shape.hidden) / layout.tp


def attention_half_bytes(seq: float, micro_batch: int, hidden: int, tp: int, sp_split: bool) -> float:
    """A hybrid's attention layer with its norm [K] Table 2: 13sbh/t with SP (attention 11, its norm's input 2), else
    sbh(5 + 8/t) (the norm's and the QKV input, the dropout mask whole; QK^T, V and the projection's input split)."""
    sbh = seq * micro_batch * hidden
    return sbh * 13 / tp if sp_split else sbh * (5 + 8 / tp)


def mlp_half_bytes(seq: float, micro_batch: int, hidden: int, ffn: int, tp: int, sp_split: bool) -> float:
    """A hybrid's MLP layer with its norm, [M]'s layer less attention_half_bytes: sbh(5 + 4f/h)/t with SP, else
    sbh(5 + 4f/(ht)) ([K] Table 2's MLP 19sbh and norm 2sbh at f = 4h)."""
    sbh = seq * micro_batch * hidden
    return sbh * (5 + 4 * ffn / hidden) / tp if sp_split else sbh * (5 + 4 * ffn / (hidden * tp))


def dropout_mask_bytes(seq: float, micro_batch: int, hidden: int, tp: int, sp_split: bool) -> float:
    """One bias-dropout-add's mask [K] Table 2: a byte an element of the held hidden states, sbh (/t with SP)."""
    return seq * micro_batch * hidden / (tp if sp_split else 1)


def own_attention_half_bytes(
    seq: float, micro_batch: int, shape: ModelShape, tp: int, sp_split: bool, dropped: frozenset[str] = frozenset()
) -> float:
    """attention_half_bytes as Megatron-Core keeps it [R]: its bias-dropout-add's mask only with hidden dropout;
    under recompute "layernorm" (`dropped`) without MLA's input norm's output, 2h a held token [C] (the other
    attention norms Transformer Engine fuses into linear_qkv: nothing to drop)."""
    mask = dropout_mask_bytes(seq, micro_batch, shape.hidden, tp, sp_split)
    half = attention_half_bytes(seq, micro_batch, shape.hidden, tp, sp_split) - (0.0 if shape.dropout else mask)
    return half - 2 * mask if "layernorm" in dropped and shape.mla_latents else half


def dense_mlp_half_bytes(
    seq: float, micro_batch: int, shape: ModelShape, tp: int, sp_split: bool, recomputed: bool = False
) -> float:
    """A dense MLP with its norm as Megatron-Core keeps it [R], where the file counts mlp_half_bytes: a gated MLP's
    fused SwiGLU keeps fc1's 2f-wide output, 2f more bytes a token over TP than the file's 4f; the mask only with
    hidden dropout. `recomputed` (recompute "mlp" [C]): the checkpoint's input alone, the residual its norm-fused fc1
    reads (2h a held token), and the mask."""
    mask = dropout_mask_bytes(seq, micro_batch, shape.hidden, tp, sp_split)
    if recomputed:
        return 2 * mask + (mask if shape.dropout else 0.0)
    half = mlp_half_bytes(seq, micro_batch, shape.hidden, shape.ffn, tp, sp_split)
    if shape.gated_mlp:
        half += seq * micro_batch * 2 * shape.ffn / tp
    return half if shape.dropout else half - mask


def moe_mlp_half_bytes(
    seq: float,
    micro_batch: int,
    shape: ModelShape,
    tp: int,
    expert_tp: int,
    sp_split: bool,
    recomputed: str = "",
    dropped: frozenset[str] = frozenset(),
) -> float:
    """An MoE layer's MLP with its norm as Megatron-Core keeps it [E], where the file costs a dense MLP
    (mlp_half_bytes). Per token the rank holds (sb/t with SP, else sb): the norm's input and output, 2h each (the
    router, the shared experts and the dispatcher read the one output), the dropout mask h (with hidden dropout
    only [R]) and the router's fp32
    scores 4E; a shared expert over TP, fc1's output and the activation's (4f_s per token over t; a fused SwiGLU's
    2f_s-wide input and its output, 6f_s); and per routed copy, k x ETP of them per token held, the grouped fc1's
    input (2 x its width) and, f/ETP wide each, fc1's output, the activation and its product with the routing
    probability, which fc2 keeps (6f/ETP; a fused SwiGLU keeps its 2f/ETP-wide input and the product: the same
    bytes). `recomputed`, the selective recomputation's MoE module:
    "moe_act" keeps fc1's output alone of those three (experts.py: the activation under CheckpointWithoutOutput,
    its output discarded once fc2 has run); "moe" keeps the norm's input and output and the mask alone
    (moe_layer.py checkpoints the whole MoE forward on the norm's output). `dropped` [C]: "layernorm" frees the
    norm's output (the checkpoint of "moe" reads the same storage), "shared_experts" the shared experts' 4f_s or
    6f_s."""
    sb = seq * micro_batch
    held = sb / tp if sp_split else sb
    h, io = shape.hidden, shape.moe_io or shape.hidden
    # the norm's input and output, and the mask
    norm = held * (2 + (0 if "layernorm" in dropped else 2) + (1 if shape.dropout else 0)) * h
    if recomputed == "moe":
        return norm
    fc1 = (4 if shape.gated_mlp else 2) * shape.moe_ffn if recomputed == "moe_act" else 6 * shape.moe_ffn
    routed = held * shape.moe_topk * (2 * io * expert_tp + fc1)
    shared = 0 if "shared_experts" in dropped else (6 if shape.gated_mlp else 4) * shape.moe_shared_ffn
    return norm + held * 4 * shape.moe_experts + sb * shared / tp + routed


def low_precision_input_savings(
    shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int
) -> tuple[float, float, float]:
    """The bytes one layer's matmul inputs save per micro-batch when Transformer Engine keeps them for the backward
    in FP8 or NVFP4 rather than bf16 [L], as (attention, dense MLP, MoE MLP); negative where a quantized copy comes
    beside a bf16 one. Each element saves 2 less its saved bytes (low_precision_weights.saved_input_bytes):
    - attention: the norm-fused QKV's input, h a held token (s b / TP with SP, else s b); MLA's instead, the fused
      up-projections' latents (q_lora_rank + kv_lora_rank a held token; none under recompute "mla_up_proj", whose
      checkpoint keeps them), and the normed input its two down-projections (or Q's and the KV down-projection)
      each quantize where bf16 kept one; linear_proj keeps attention's bf16 output but under delayed scaling, where
      it adds a quantized copy beside the one flash attention keeps, or replaces the output of unfused attention or
      of one the core_attn recomputation reruns, which keep none;
    - a dense MLP: fc1's norm output (h a held token) and fc2's input (ffn / TP a token);
    - an MoE MLP [E]: the shared experts' fc2 input (their width / TP a token), and for each routed copy the grouped
      fc1's input (its width, on each of ETP ranks) and fc2's (the expert width / ETP on each; none under
      "moe_act", where fc2 keeps the activation it discards); under delayed scaling the shared experts' fc1 adds a
      copy of the norm's output, which the router keeps in bf16. None under "moe", which keeps the MoE layer's input
      alone.
    What layout.dropped_modules leaves out saves nothing: a dense MLP under "mlp" and the shared experts under
    "shared_experts" keep nothing inside their checkpoint (transformer_layer.py, moe_layer.py te_checkpoint), and
    under "layernorm" MLA's down-projections keep the norm's bf16 output, which the recomputation discards
    (set_save_original_input)."""
    fmt = layout.matmul_format
    if fmt is None:
        return 0.0, 0.0, 0.0
    sb, h, tp = seq * micro_batch, shape.hidden, layout.tp
    held = sb / tp if layout.sp_split else sb
    kept = 2 - saved_input_bytes(fmt, layout.fp8_recipe)  # an input no other op keeps, quantized instead of bf16
    normed = 2 - saved_input_bytes(fmt, layout.fp8_recipe, gathered_by_norm_layer=layout.sp_split)
    delayed = fmt == "fp8" and layout.fp8_recipe == "delayed"
    copy = saved_input_bytes(fmt, layout.fp8_recipe)  # a quantized copy beside a bf16 input another op keeps
    dropped = layout.dropped_modules
    if shape.mla_latents:
        latents = 0.0 if layout.mla_recompute else normed * held * shape.mla_latents
        attention = latents + (0.0 if "layernorm" in dropped else (2 - 2 * copy) * held * h)
    else:
        attention = normed * held * h
    if delayed:
        context = sb * (shape.context_width or h) / tp
        attention += -copy * context if layout.attention_keeps_output else kept * context
    dense = 0.0 if "mlp" in dropped else normed * held * h + kept * sb * shape.ffn / tp
    if not shape.moe_topk or layout.moe_recompute == "moe":
        return attention, dense, 0.0
    io, etp = shape.moe_io or h, layout.expert_tp
    # each of the k x ETP copies a held token's experts compute (its input io wide, fc2's f / ETP) [E]
    routed = held * shape.moe_topk * (io * etp + (0.0 if layout.moe_recompute == "moe_act" else shape.moe_ffn))
    shared = shape.moe_shared_ffn if "shared_experts" not in dropped else 0
    moe = kept * (sb * shared / tp + routed)
    if delayed and shared and "layernorm" not in dropped:  # "layernorm": fc1 keeps the original input [C]
        moe -= copy * held * h
    return attention, dense, moe


def low_precision_saved_bytes(
    shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int, indices: Sequence[int]
) -> tuple[float, float]:
    """What the decoder layers `indices` save per micro-batch keeping their matmuls' inputs quantized [L]
    (low_precision_input_savings, each layer by its kind; none in a layer kept in BF16), and what the one layer a full
    recomputation re-runs saves while its backward holds it."""
    attention, dense, moe = low_precision_input_savings(shape, layout, seq, micro_batch)
    low = [i for i in indices if not sixteen_bit_layer(i, shape.layers, layout.bf16_layers)]
    low_moe = shape.moe_layers(low)
    saved = attention * len(low) + dense * (len(low) - low_moe) + moe * low_moe
    return saved, (attention + (moe if low_moe else dense) if low else 0.0)


def mamba_layer_bytes(
    seq: float, micro_batch: int, hidden: int, mamba: tuple[int, int, int, int], tp: int, sp_split: bool
) -> float:
    """A Mamba-2 layer's kept activations [H] section 3, per token (4h + 4) bytes (its input and the fused norm's
    output and rstd, split over TP only with SP) and (10I + 4GN + 2H + 4G)/t (in_proj's output, the scan's output
    before and after gating, the gated norm's rstd, out_proj's input); selective recomputation re-runs none of it."""
    inner, heads, groups, state = mamba
    per_token = (4 * hidden + 4) / (tp if sp_split else 1) + (
        10 * inner + 4 * groups * state + 2 * heads + 4 * groups
    ) / tp
    return seq * micro_batch * per_token


def hybrid_layer_bytes(shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int, i: int) -> float:
    """Hybrid layer i's activations [H]: its mixer's (attention or Mamba) and its MLP's halves, as Megatron-Core
    keeps them [R]."""
    h, tp, sp = shape.hidden, layout.tp, layout.sp_split
    mixer, mlp, _ = shape.hybrid_kinds[i]
    total = 0.0
    dropped = layout.dropped_modules
    if "attention" in mixer:
        total += own_attention_half_bytes(seq, micro_batch, shape, tp, sp, dropped) + attention_width_bytes(
            shape, layout, seq, micro_batch
        )
        total += ring_output_copy_bytes(shape, layout, seq, micro_batch)
        total += stored_scores_bytes(shape, layout, seq, micro_batch)
    if mixer == "mamba":
        total += mamba_layer_bytes(seq, micro_batch, h, shape.mamba, tp, sp)
        if shape.dropout:  # its bias-dropout-add's mask [R]
            total += dropout_mask_bytes(seq, micro_batch, h, tp, sp)
    if mlp == "moe" and shape.moe_topk:
        total += moe_mlp_half_bytes(seq, micro_batch, shape, tp, layout.expert_tp, sp, layout.moe_recompute, dropped)
    elif mlp != "none":
        total += dense_mlp_half_bytes(seq, micro_batch, shape, tp, sp, "mlp" in dropped)
    return total


def global_buffer_bytes(
    shape: ModelShape,
    layout: MemoryLayout,
    seq_len: int,
    micro_batch: int,
    moe: bool,
    last: bool,
    deferred_calls: int = 0,
) -> float:
    """Megatron-Core's global memory buffers on a stage [U], 16-bit. "mpu" at the largest of what the stage asks of
    it: on the last stage under sequence parallelism Megatron's output layer's input gathered over TP (s b / CP
    tokens, hidden wide; none for Transformer Engine's head), and on a stage running MoE layers under the allgather
    dispatcher each one's tokens gathered over expert TP x EP (a rank's s b / CP, over TP under SP, times ETP x EP;
    each as wide as a routed copy's input). And with the output layer's weight gradients deferred [D], under sequence
    parallelism the drain's gathers of its input into "mpu_0" and, from two `deferred_calls`, "mpu_1"
    (utils.py drain_embedding_wgrad_compute), each as large as the output layer's."""
    held = seq_len / layout.cp * micro_batch / (layout.tp if layout.sp_split else 1)  # the tokens a rank holds
    output_input = held * layout.tp * shape.hidden if last and layout.sp_split else 0.0
    largest = 0.0 if layout.te_output_layer else output_input
    gathered = layout.expert_tp * layout.ep
    if moe and layout.ep_dispatcher == "allgather" and gathered > 1:
        largest = max(largest, held * gathered * (shape.moe_io or shape.hidden))
    return ACT_BYTES * (largest + min(deferred_calls, 2) * output_input)


def deferred_output_wgrad_calls(shape: ModelShape, layout: MemoryLayout, num_microbatches: int | None) -> int:
    """The output layer's weight-gradient calls a step defers to the pipeline flush [D]: the first `wgrad_deferral`
    (0: all) of its micro-batches' calls, one per micro-batch and one more for each MTP depth; with the step's
    micro-batches unknown, the limit's."""
    limit = layout.wgrad_deferral
    if limit is None:
        return 0
    if num_microbatches is None:
        return limit
    calls = num_microbatches * (1 + shape.mtp_layers)
    return min(limit, calls) if limit else calls


def _holds_moe(shape: ModelShape, layers: Sequence[int], last: bool) -> bool:
    """Whether a stage runs an MoE layer: one of its own, or on the last stage an MTP layer of the last one's kind."""
    if not shape.moe_topk:
        return False
    if shape.hybrid_kinds:
        return any(shape.hybrid_kinds[i][1] == "moe" for i in layers)
    return any(shape.moe_pattern[i] for i in layers) or (last and shape.mtp_layers > 0 and shape.moe_pattern[-1])


def dummy_wgrad_bytes(shape: ModelShape, layout: MemoryLayout, layers: Sequence[int], last: bool = False) -> float:
    """Transformer Engine's placeholder weight gradients on a stage [W]: one 16-bit tensor per distinct shape of its
    linear layers' TP-split weights, held for the run (get_dummy_wgrad's cache); on the last stage the output layer's
    (Megatron's own ColumnParallelLinear takes it from the same cache: tensor_parallel/layers.py) and the MTP
    layers' (a decoder layer of the last layer's kind and eh_proj)."""
    if not layout.dummy_wgrads or not shape.linears:
        return 0.0
    parts: set[str] = set()
    if shape.hybrid_kinds:
        for mixer, mlp, _ in (shape.hybrid_kinds[i] for i in layers):
            parts |= {"attention" if "attention" in mixer else mixer, mlp}
    elif layers:
        parts |= {"attention", *("moe" if kind else "mlp" for kind in {shape.moe_pattern[i] for i in layers})}
    if last:
        parts.add("output")
    if last and shape.mtp_layers:
        parts |= {"attention", "mtp", "moe" if shape.moe_pattern[-1] else "mlp"}
    return _placeholder_bytes(shape.linears, frozenset(parts), layout.tp, layout.expert_tp)


@functools.lru_cache(maxsize=4096)  # a plan search asks for the same stage kinds at each TP many times
def _placeholder_bytes(
    linears: tuple[tuple[str, tuple[tuple[int, int, str], ...]], ...], parts: frozenset[str], tp: int, expert_tp: int
) -> float:
    """2 bytes for each distinct TP-split weight shape of `parts`' linear layers [W]."""
    by_part = dict(linears)
    divisors = {"column": (tp, 1), "row": (1, tp), "whole": (1, 1),
                "expert_column": (expert_tp, 1), "expert_row": (1, expert_tp)}  # fmt: skip
    distinct = {
        (rows / divisors[split][0], cols / divisors[split][1])
        for part in parts
        for rows, cols, split in by_part.get(part, ())
    }
    return 2.0 * sum(rows * cols for rows, cols in distinct)


def full_recompute_layer_bytes(seq: float, micro_batch: int, hidden: int, tp: int, sequence_parallel: bool) -> float:
    """One layer under full recomputation [K] section 4: its 16-bit input, 2sbh (2sbh/t with SP), "2sbhL" in all."""
    return 2 * seq * micro_batch * hidden / (tp if sequence_parallel else 1)


def embedding_activation_bytes(seq: float, micro_batch: int, hidden: int, tp: int, sp_split: bool) -> float:
    """One micro-batch on stage 0: 8sb of token ids, sbh of dropout mask, over TP with SP [M]; [K] 4.3 has sbh/t."""
    sb = seq * micro_batch
    return (8 * sb + sb * hidden) / (tp if sp_split else 1)


def output_activation_bytes(seq: float, micro_batch: int, hidden: int, vocab: int, tp: int, sp_split: bool) -> float:
    """One micro-batch on the last stage: 4sbh(1 + v/h)/t with SP, else 2(sbv/t + sbh) [M]; [K] 4.3, the SP one."""
    sb = seq * micro_batch
    if sp_split:
        return sb * hidden * 4 * (1 + vocab / hidden) / tp
    return (sb * vocab / tp + sb * hidden) * 2


def vocab_parallel_loss_bytes(
    seq: float,
    micro_batch: int,
    vocab: int,
    tp: int,
    sp_split: bool,
    mtp_layers: int = 0,
    impl: str = "vocab-parallel",
) -> float:
    """The last stage's losses beyond what [M] counts of their logits: Megatron's vocab_parallel_cross_entropy casts
    the rank's vocab / TP share of the logits to fp32 and keeps the exponentials for the backward
    (megatron/core/tensor_parallel/cross_entropy.py at d98e8a64dd: .float(), save_for_backward(exp_logits, ...)), 6
    bytes a logit at its peak with the bf16 logits beside them, where [M]'s output term has 2 (2sbv/t) without SP
    and 4 (4sbv/t) with it; and each MTP depth's own loss (multi_token_prediction.py), which [M] does not count.
    `impl` vocab-parallel-fused (--cross-entropy-loss-fusion) holds 10, vocab-parallel-te (Transformer Engine's
    kernel, in place) the bf16 logits alone (loss.logit_peak_bytes)."""
    logits, peak = seq * micro_batch * vocab / tp, logit_peak_bytes(impl)
    return (peak - (4 if sp_split else 2) + peak * mtp_layers) * logits


def deferred_output_wgrad_bytes(
    shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int, num_microbatches: int | None
) -> float:
    """What the last stage keeps for the output layer's deferred weight gradients [D] at its peak: each deferred
    call's input (split over TP under SP, as the layer takes it) and its logits' gradient in 16 bits (vocab / TP a
    token), for the calls before the last micro-batch's, the first `wgrad_deferral` of the step (0: all). A
    micro-batch calls the layer once, and once more for each MTP depth. With the step's micro-batches unknown, the
    limit's calls (the buffer full)."""
    if layout.wgrad_deferral is None:
        return 0.0
    if num_microbatches is None and not layout.wgrad_deferral:
        raise ValueError("deferring every call of the step needs its micro-batches")
    held = deferred_output_wgrad_calls(shape, layout, num_microbatches)
    if num_microbatches is not None:  # those before the last micro-batch's
        held = min(held, (num_microbatches - 1) * (1 + shape.mtp_layers))
    tokens = seq * micro_batch
    return held * 2 * tokens * (shape.vocab / layout.tp + shape.hidden / (layout.tp if layout.sp_split else 1))


def interleaved_memory_penalty(pp: int, virtual_stages: int) -> float:
    """1 + (p - 1)/(pv), interleaving's extra on stage 0 [M] (interleaved_schedule_memory_penalty), [K] 4.3."""
    return 1 + (pp - 1) / (pp * virtual_stages)


def first_stage_microbatches(pp: int, virtual_stages: int = 1, num_microbatches: int | None = None) -> float:
    """Micro-batches of L/p layers on stage 0: p x penalty interleaved, else p x min(1, m/p) [M], [K] 4.2.3."""
    if pp == 1:
        return 1.0
    if virtual_stages > 1:
        return pp * interleaved_memory_penalty(pp, virtual_stages)
    return pp * (1 if num_microbatches is None else min(1, num_microbatches / pp))


def microbatches_in_flight(
    pp: int,
    stage: int = 0,
    virtual_stages: int = 1,
    num_microbatches: int | None = None,
    extra_warmup: int = 0,
    group: int | None = None,
    chunk_layers: Sequence[int] = (),
) -> float:
    """Micro-batches of its layers a stage keeps: warm-up + 1 forwards, at most all [S] (get_pp_rank_microbatches;
    interleaved, (p - r - 1) x 2 + (v - 1) x `group` (PP unless given) + `extra_warmup` forwards in the warm-up:
    one more with the MoE all-to-alls overlapped). Interleaved, those forwards go to its chunks in the schedule
    table's order (chunk_forwards); where its chunks hold unlike numbers of layers (`chunk_layers`, chunk by chunk),
    the count is each chunk's forwards weighted by its layers, else the forwards over V."""
    if pp == 1:
        return 1.0
    if virtual_stages == 1:
        in_flight = pp - stage
        return float(in_flight if num_microbatches is None else min(in_flight, num_microbatches))
    chunks = 2 * (pp - stage - 1) + (virtual_stages - 1) * (group or pp) + 1 + extra_warmup
    if num_microbatches is not None:
        chunks = min(chunks, num_microbatches * virtual_stages)
    if len(set(chunk_layers)) <= 1:
        return chunks / virtual_stages
    kept = chunk_forwards(num_microbatches, virtual_stages, group or pp, chunks)
    return sum(n * kept.count(c) for c, n in enumerate(chunk_layers)) / sum(chunk_layers)


def chunk_forwards(num_microbatches: int | None, virtual_stages: int, group: int, count: int) -> list[int]:
    """The model chunk of each of a rank's first `count` forwards, in Megatron-Core's interleaved schedule table
    (schedules.py get_schedule_table): each `group` of micro-batches (the last one what is left) through chunk 0,
    then chunk 1, ...; without a micro-batch count, groups of `group` throughout."""
    out: list[int] = []
    start = 0
    while len(out) < count:
        size = group if num_microbatches is None else min(group, num_microbatches - start)
        if size <= 0:
            break
        for chunk in range(virtual_stages):
            out += [chunk] * size
        start += size
    return out[:count]


def _in_flight(layout: MemoryLayout, one_f_one_b: float, num_microbatches: int | None) -> float:
    """Micro-batches whose activations a stage holds at its peak: all m under GPipe, else 1F1B's count."""
    if layout.all_forwards_first and layout.pp > 1 and num_microbatches is not None:
        return float(num_microbatches)
    return one_f_one_b


def stage_activation_bytes(
    shape: ModelShape,
    layout: MemoryLayout,
    seq_len: int,
    micro_batch: int,
    stage: int,
    layers: float,
    in_flight: float,
    indices: Sequence[int] = (),
    own_widths: bool = False,
) -> float:
    """A stage's layers (and embedding) x micro-batches in flight, output once on the last, x 1.05 without SP [M]; a
    hybrid's layers (`indices`) each its own [H]. `own_widths` (each stage's own view, not the file's): a layer keeps
    attention's tensors at their own widths [A] (attention_width_bytes), its halves as Megatron-Core keeps them [R]
    (own_attention_half_bytes, dense_mlp_half_bytes: a gated MLP's wider fc1 output, masks only with dropout), less
    what recompute_modules "mlp", "shared_experts" and "layernorm" drop [C]; the one layer whose backward re-makes
    what a recomputed module dropped (Q, K and V under "mla_up_proj") holds it."""
    s, b, h, tp = seq_len / layout.cp, micro_batch, shape.hidden, layout.tp  # each CP rank holds s / CP tokens
    sp = layout.sp_split
    scores = stored_scores_bytes(shape, layout, s, b)
    widths = remade = 0.0
    if own_widths:
        widths = attention_width_bytes(shape, layout, s, b, layout.mla_recompute)
        remade = attention_width_bytes(shape, layout, s, b) - widths
        widths += ring_output_copy_bytes(shape, layout, s, b)
    if shape.hybrid_kinds:
        each = [hybrid_layer_bytes(shape, layout, s, b, i) for i in indices]
        if layout.recompute == "full":
            # each checkpointed layer keeps its input, the others all they save [K2]; the backward re-runs one
            ckpt = set(_checkpointed_layers(shape, layout, stage))
            held = [e for i, e in zip(indices, each, strict=True) if i in ckpt]
            kept_whole = sum(e for i, e in zip(indices, each, strict=True) if i not in ckpt)
            total = (full_recompute_layer_bytes(s, b, h, tp, sp) * len(held) + kept_whole) * in_flight
            total += max(held, default=0.0)
        else:
            total = sum(each) * in_flight
            # the one layer whose backward re-runs what the selective recomputation dropped [E], [C]
            kinds = {shape.hybrid_kinds[i][1] for i in indices}
            total += max(
                _moe_rerun_bytes(shape, layout, s, b) if "moe" in kinds else 0.0,
                _dense_rerun_bytes(shape, layout, s, b) if "dense" in kinds else 0.0,
            )
    else:
        dropped = layout.dropped_modules
        layer = layer_activation_bytes(s, b, h, shape.ffn, tp, sp) + scores + widths
        dense_mlp = mlp_half_bytes(s, b, h, shape.ffn, tp, sp)
        moe = shape.moe_layers(indices)
        rerun = 0.0  # what the one layer whose backward re-runs a recomputed module re-makes, the most of any
        if own_widths:
            dense_mlp = dense_mlp_half_bytes(s, b, shape, tp, sp, "mlp" in dropped)
            attention = own_attention_half_bytes(s, b, shape, tp, sp, dropped)
            layer = attention + dense_mlp + scores + widths
            if dropped:  # the norm output "layernorm" dropped, re-made while one layer's backward runs
                remade += own_attention_half_bytes(s, b, shape, tp, sp) - attention
            if len(indices) > moe:
                rerun = _dense_rerun_bytes(shape, layout, s, b)
        # each stage's own view (its layer indices given): an MoE layer's MLP as Megatron-Core keeps it [E], beyond
        # the dense MLP, and what the one MoE layer whose backward re-runs its forward re-creates
        kept = 0.0
        if moe:
            policy = moe_mlp_half_bytes(s, b, shape, tp, layout.expert_tp, sp, layout.moe_recompute, dropped)
            kept = policy - dense_mlp
            rerun = max(rerun, _moe_rerun_bytes(shape, layout, s, b))
        # each stage's own view: what its FP8 or NVFP4 layers save keeping their matmuls' inputs quantized [L]
        block = layout.recompute == "full" and layout.recompute_block is not None
        saved = rerun_saved = 0.0  # over the stage's layers, and in the one layer a full recomputation re-runs
        if own_widths and layout.matmul_format is not None and not block:  # the block's split counts its own
            saved, rerun_saved = low_precision_saved_bytes(shape, layout, s, b, indices)
        if block:
            total = _block_recompute_bytes(shape, layout, s, b, stage, layers, in_flight, indices, layer, kept)
        elif layout.recompute == "full":
            # the kept inputs, and the one layer the backward re-runs at a time holding all it saves (selective's
            # formula under SP; under flash attention selective drops nothing else)
            total = full_recompute_layer_bytes(s, b, h, tp, sp) * layers * in_flight
            total += layer + (max(kept, 0.0) if moe else 0.0)
            total -= rerun_saved
        else:
            total = (layer * layers + kept * moe) * in_flight + rerun + (remade if layers else 0.0)
            total -= saved * in_flight
    if stage == 0:
        embedding = embedding_activation_bytes(s, b, h, tp, sp)
        if own_widths and not shape.dropout:  # the embedding's dropout keeps no mask at p = 0 [R]
            embedding -= dropout_mask_bytes(s, b, h, tp, sp)
        total += embedding * in_flight
    if stage == layout.pp - 1:
        total += output_activation_bytes(s, b, h, shape.vocab, tp, sp)
    return total if sp else total * WITHOUT_SP_OVERHEAD


def _checkpointed_layers(shape: ModelShape, layout: MemoryLayout, stage: int) -> tuple[int, ...]:
    """The decoder layers of `stage` that full recomputation checkpoints: all, or under --recompute-block N the first
    N of each of its model chunks [K2] (layout_step.checkpointed_rank_layers)."""
    return checkpointed_rank_layers(layout.pipeline_split(shape.layers), layout.recompute_block)[stage]


def _block_recompute_bytes(
    shape: ModelShape,
    layout: MemoryLayout,
    seq: float,
    micro_batch: int,
    stage: int,
    layers: float,
    in_flight: float,
    indices: Sequence[int],
    layer: float,
    kept: float,
) -> float:
    """A stage's layers under full recomputation of the first N of each chunk [K2]: those keep their inputs and the
    backward re-runs one of them at a time, holding all it saves; the others keep all they save, as without
    recomputation (`layer`, an MoE layer `kept` more; less what their FP8 or NVFP4 inputs save [L]). Megatron's view
    (no `indices`): of its `layers`, as many as the stage's chunks checkpoint."""
    tp, sp = layout.tp, layout.sp_split
    ckpt = _checkpointed_layers(shape, layout, stage)
    if not indices:  # the file's L / PP layers, the share of them the rank's chunks checkpoint
        built = len(_stage_layer_indices(shape, layout)[stage])
        checkpointed = layers * len(ckpt) / built if built else 0.0
        total = full_recompute_layer_bytes(seq, micro_batch, shape.hidden, tp, sp) * checkpointed * in_flight
        return total + layer * (layers - checkpointed) * in_flight + (layer if checkpointed else 0.0)
    held = [i for i in indices if i in ckpt]
    rest = [i for i in indices if i not in ckpt]
    rest_saved = rerun_saved = 0.0
    if layout.matmul_format is not None:
        rest_saved = low_precision_saved_bytes(shape, layout, seq, micro_batch, rest)[0]
        rerun_saved = low_precision_saved_bytes(shape, layout, seq, micro_batch, held)[1]
    total = full_recompute_layer_bytes(seq, micro_batch, shape.hidden, tp, sp) * len(held) * in_flight
    total += (layer * len(rest) + kept * shape.moe_layers(rest) - rest_saved) * in_flight
    if held:
        total += layer + (max(kept, 0.0) if shape.moe_layers(held) else 0.0) - rerun_saved
    return total


def _dense_rerun_bytes(shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int) -> float:
    """What a dense MLP recomputed under "mlp" re-makes while its layer's backward runs [C]."""
    if "mlp" not in layout.dropped_modules:
        return 0.0
    tp, sp = layout.tp, layout.sp_split
    return dense_mlp_half_bytes(seq, micro_batch, shape, tp, sp) - dense_mlp_half_bytes(
        seq, micro_batch, shape, tp, sp, recomputed=True
    )


def _moe_rerun_bytes(shape: ModelShape, layout: MemoryLayout, seq: float, micro_batch: int) -> float:
    """What an MoE layer's recomputed modules re-make while its backward runs [E], [C]."""
    tp, etp, sp = layout.tp, layout.expert_tp, layout.sp_split
    policy = moe_mlp_half_bytes(seq, micro_batch, shape, tp, etp, sp, layout.moe_recompute, layout.dropped_modules)
    return moe_mlp_half_bytes(seq, micro_batch, shape, tp, etp, sp) - policy


def activation_bytes(
    shape: ModelShape, layout: MemoryLayout, seq_len: int, micro_batch: int, num_microbatches: int | None = None
) -> float:
    """Stage 0's activations [M] (compute_activation_memory[_without_sp], as report_theoretical_memory picks)."""
    in_flight = _in_flight(
        layout, first_stage_microbatches(layout.pp, layout.virtual_stages, num_microbatches), num_microbatches
    )
    first = _stage_layer_indices(shape, layout)[0] if shape.hybrid_kinds else ()
    return stage_activation_bytes(shape, layout, seq_len, micro_batch, 0, shape.layers / layout.pp, in_flight, first)


def _chunk_layers(shape: ModelShape, layout: MemoryLayout, stage: int) -> tuple[int, ...]:
    """The decoder layers of each of a pipeline rank's model chunks, chunk by chunk (its virtual stages r, r + PP,
    ...: layout_step.virtual_stage_layers); none without interleaving."""
    if layout.virtual_stages == 1:
        return ()
    return virtual_stage_layers(layout.pipeline_split(shape.layers))[stage :: layout.pp]


def _stage_layer_indices(shape: ModelShape, layout: MemoryLayout) -> tuple[tuple[int, ...], ...]:
    return stage_layers(layout.pipeline_split(shape.layers))


# ----------------------------------------------------------------------------------------------- totals


@frozen
class StageMemory:
    """One pipeline rank's GPU: its parameters, their states and its activations (bytes)."""

    stage: int
    layers: int
    parameters: float
    weight_and_optimizer: float
    activations: float
    # Megatron-FSDP's unsharded buffers at ZeRO 2-3 (fsdp_buffer_bytes) [F], the GEMM libraries' workspaces and
    # Transformer Engine's own held tensors (dummy_wgrad_bytes, weight_cache_bytes)
    buffers: float = 0.0
    weights: float = 0.0  # of weight_and_optimizer: the weights' bytes, and the gradients'
    grads: float = 0.0
    # what the optimizer step allocates once the activations are gone (Muon's working set: muon_step_bytes)
    step_transient: float = 0.0

    @property
    def total(self) -> float:
        """At the peak: the backward's activations, or the optimizer step's own tensors where they are larger."""
        peak = self.step_transient if self.step_transient > self.activations else self.activations  # not max(): hot
        return self.weight_and_optimizer + peak + self.buffers

    @property
    def peaks_at_step(self) -> bool:
        return self.step_transient > self.activations


@frozen
class LayoutMemory:
    """Memory per GPU: Megatron's (most loaded shard's states + first stage's activations) and each stage's own."""

    parameters: float  # num_parameters_on_most_loaded_model_shard, per GPU
    weight_and_optimizer: float  # bytes
    activations: float  # bytes, the first stage
    stages: tuple[StageMemory, ...]

    @property
    def total(self) -> float:
        """Megatron's total_memory [M] (report_theoretical_memory)."""
        return self.weight_and_optimizer + self.activations

    @property
    def most_loaded(self) -> StageMemory:
        """The stage with the most bytes per GPU (the first of equals)."""
        return max(self.stages, key=lambda s: (s.total, -s.stage))


def stage_memory(
    shape: ModelShape,
    layout: MemoryLayout,
    seq_len: int,
    micro_batch: int,
    num_microbatches: int | None = None,
) -> tuple[StageMemory, ...]:
    """Every pipeline stage's memory per GPU [M], [B], [S]."""
    out = []
    for stage, layers in enumerate(_stage_layer_indices(shape, layout)):
        held = parameters_on_stage(shape, layout, stage, layers)
        warmup = 1 if layout.ep_overlap_warmup else 0
        one_f_one_b = microbatches_in_flight(
            layout.pp, stage, layout.virtual_stages, num_microbatches, warmup, layout.microbatch_group,
            _chunk_layers(shape, layout, stage),
        )  # fmt: skip
        in_flight = _in_flight(layout, one_f_one_b, num_microbatches)
        acts = stage_activation_bytes(
            shape, layout, seq_len, micro_batch, stage, len(layers), in_flight, layers, own_widths=True
        )
        if stage == layout.pp - 1:
            s = seq_len / layout.cp
            acts += vocab_parallel_loss_bytes(
                s, micro_batch, shape.vocab, layout.tp, layout.sp_split, shape.mtp_layers, layout.loss_impl
            )
            acts += deferred_output_wgrad_bytes(shape, layout, s, micro_batch, num_microbatches)
        low_precision = quantized_layer_parameters(shape, layout, layers, mtp=stage == layout.pp - 1)
        muon = muon_on_stage(shape, layout, stage, layers) if layout.muon else None
        weights, grads, optimizer = state_bytes(held, layout, low_precision, muon)
        last = stage == layout.pp - 1
        buffers = fsdp_buffer_bytes(shape, layout, stage, layers) + layout.workspaces
        if layout.muon:
            buffers += muon_padding_bytes(shape, layout, stage, layers)
        buffers += weight_cache_bytes(layout, low_precision)
        if layout.fused_experts:
            recomputed = layout.recompute == "full" or layout.moe_recompute == "moe"
            moe_layers = shape.moe_layers(layers) + (shape.mtp_layers if last and shape.moe_pattern[-1] else 0)
            # recomputed, the one MoE layer whose backward re-runs its forward holds them; under --recompute-block
            # the MoE layers it does not checkpoint (MTP's among them) hold theirs for every micro-batch in flight
            copies = 1.0 / max(moe_layers, 1) if recomputed else in_flight
            if layout.recompute == "full" and layout.recompute_block is not None and moe_layers:
                rerun_moe = shape.moe_layers(_checkpointed_layers(shape, layout, stage))
                copies = (moe_layers - rerun_moe) / moe_layers * in_flight + (1.0 / moe_layers if rerun_moe else 0.0)
            acts += fused_expert_weight_bytes(layout, low_precision, copies)
        if last:
            buffers += output_weight_cache_bytes(shape, layout)
        buffers += dummy_wgrad_bytes(shape, layout, layers, last)
        moe = _holds_moe(shape, layers, last)
        if moe:  # TE allocates them at the first grouped GEMM the stage runs
            buffers += layout.grouped_workspaces
        deferred = deferred_output_wgrad_calls(shape, layout, num_microbatches) if last else 0
        buffers += global_buffer_bytes(shape, layout, seq_len, micro_batch, moe, last, deferred)
        states = weights + grads + optimizer
        step = muon_step_bytes(shape, layout, stage, layers) if layout.muon else 0.0
        out.append(StageMemory(stage, len(layers), held.total, states, acts, buffers, weights, grads, step))
    return tuple(out)


@functools.lru_cache(maxsize=4096)  # a plan search asks for one layout's memory more than once
def layout_memory(
    shape: ModelShape,
    layout: MemoryLayout,
    seq_len: int,
    micro_batch: int,
    num_microbatches: int | None = None,
) -> LayoutMemory:
    """Megatron's memory per GPU and every stage's [M] (report_theoretical_memory)."""
    held = parameters_on_most_loaded_shard(shape, layout)
    return LayoutMemory(
        parameters=held.total,
        weight_and_optimizer=weight_and_optimizer_bytes(held, layout),
        activations=activation_bytes(shape, layout, seq_len, micro_batch, num_microbatches),
        stages=stage_memory(shape, layout, seq_len, micro_batch, num_microbatches),
    )


# ----------------------------------------------------------------------------------------------- adapter


@functools.lru_cache(maxsize=256)  # frozen specs: one shape per (architecture, TP, ...)
def model_shape(
    a: ModelArchitecture,
    tp: int,
    mtp_layers: int = 0,
    vocab_divisible_by: int = VOCAB_DIVISIBLE_BY,
    muon: bool = False,
) -> ModelShape:
    """A spec as Megatron's arguments [M]: kv_heads as num_query_groups, head_dim as kv_channels, padded vocab [V],
    `mtp_layers` as mtp_num_layers; with `muon`, the weights Muon orthogonalizes (muon_groups)."""
    h = a.hidden
    norm_size = a.norm_weights
    if a.mla is not None:
        m = a.mla
        attention = mla_attention_parameters(
            h, a.heads, m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, norm_size
        )
    else:
        attention = attention_parameters(h, a.heads, a.n_kv_heads, a.d_head)
    if a.v_head_dim is not None and a.mla is None:  # value heads of their own width: v_proj and o_proj
        attention += (a.n_kv_heads + a.heads) * (a.d_value - a.d_head) * h
    if a.global_attention is not None:  # Gemma 4's global layers, spread over every layer as their mean
        extra = mixer_parameters(a, "global attention") - mixer_parameters(a, "attention")
        attention += extra * a.mixers.count("global attention") / a.layers
    norms = layernorm_parameters(h, norm_size)
    dense_ffn = a.ffn if a.ffn is not None else a.moe.ffn if a.moe is not None else 0
    dense = ParamGroups(attention + mlp_parameters(h, dense_ffn, a.gated_mlp), norms)
    moe_layer = moe_half = ParamGroups()
    if a.moe is not None:
        e = a.moe
        shared = mlp_parameters(h, e.shared * e.shared_width, a.gated_mlp) if e.shared else 0.0
        gate = float(h) if e.shared and e.shared_gate else 0.0
        moe_layer = ParamGroups(
            attention + shared,
            # LatentMoE's projections are replicated over TP (Megatron-Core moe_layer.py: parallel_mode "duplicated")
            norms + router_parameters(h, e.experts, a.linear_bias) + gate + latent_projections(a),
            routed_expert_parameters(e.expert_io(h), e.ffn, e.experts, a.gated_mlp),
        )
        moe_half = ParamGroups(  # a hybrid's MoE layer: no attention, one norm [H]
            shared,
            norm_size * h + router_parameters(h, e.experts, a.linear_bias) + gate + latent_projections(a),
            moe_layer.expert_sharded,
        )
    hybrid_layers: tuple[ParamGroups, ...] = ()
    if a.hybrid:
        norm = float(norm_size * h)
        mlps = {
            "dense": ParamGroups(mlp_parameters(h, dense_ffn, a.gated_mlp), norm),
            "moe": moe_half,
            "none": ParamGroups(),
        }

        def mixer_half(mixer: str) -> ParamGroups:  # its weights split over TP, its norm whole [H]
            if mixer == "none":
                return ParamGroups()
            return ParamGroups(
                attention if mixer in ("attention", "global attention") else mixer_parameters(a, mixer), norm
            )

        hybrid_layers = tuple(mixer_half(mixer) + mlps[mlp] for mixer, mlp, _ in a.layer_kinds)
    ssm, widths = a.ssm, attention_widths(a)
    linears = te_linears(a, dense_ffn, padded_vocab_size(a.vocab, tp, vocab_divisible_by))
    whole = {part: sum(out * into for out, into, split in weights if split == "whole") for part, weights in linears}
    dense_biases, moe_biases = layer_biases(a, dict(linears)) if not a.hybrid else (NO_PARAMETERS, NO_PARAMETERS)
    return ModelShape(
        hidden=h,
        layers=a.layers,
        ffn=dense_ffn,
        vocab=padded_vocab_size(a.vocab, tp, vocab_divisible_by),
        dense_layer=dense,
        moe_layer=moe_layer,
        moe_pattern=tuple(a.moe_layer(i) for i in range(a.layers)),
        final_layernorm=float(norm_size * h),
        untied=not a.tied_embeddings,
        mtp_layers=mtp_layers,
        heads=a.heads,
        dropout=a.dropout > 0,  # the engine's convention: the spec's dropout is the attention's too (ops.py)
        query_width=widths.query,
        key_width=widths.key,
        value_width=widths.value,
        context_width=widths.context,
        kv_groups=widths.groups,
        latent_bytes=widths.latent_bytes,
        latent_recomputed_bytes=widths.latent_recomputed_bytes,
        hybrid_layers=hybrid_layers,
        hybrid_kinds=a.layer_kinds if a.hybrid else (),
        mamba=(ssm.inner, ssm.heads or 0, ssm.groups, ssm.state) if ssm is not None else (0, 0, 0, 0),
        moe_experts=a.moe.experts if a.moe is not None else 0,
        moe_topk=a.moe.active if a.moe is not None else 0,
        moe_ffn=a.moe.ffn if a.moe is not None else 0,
        moe_shared_ffn=a.moe.shared * a.moe.shared_width if a.moe is not None and a.moe.shared else 0,
        moe_io=a.moe.expert_io(h) if a.moe is not None else 0,
        gated_mlp=a.gated_mlp,
        linears=linears,
        duplicated_attention=float(whole["attention"]),
        mla_latents=(a.mla.q_lora_rank or 0) + a.mla.kv_lora_rank if a.mla is not None else 0,
        duplicated_moe=float(whole.get("moe", 0)),
        dense_biases=dense_biases,
        moe_biases=moe_biases,
        position_table=float(a.learned_positions * h),
        muon_layers=tuple(layer_matrices(a, a.moe_layer(i), a.mixer(i), a.has_mlp(i), "fused")
                          for i in range(a.layers)) if muon else (),
        muon_mtp=mtp_matrices(a, "fused") if muon and mtp_layers else (),
        muon_positions=position_matrices(a) if muon else (),
    )  # fmt: skip


def muon_groups(matrices: Iterable[Matrix]) -> ParamGroups:
    """Muon's matrices (muon.py) as the file's groups: those split over TP, those whole on every TP rank, and the
    routed experts'."""
    groups = {"split": 0.0, "whole": 0.0, "expert": 0.0}
    for m in matrices:
        groups["expert" if m.expert else "split" if m.split else "whole"] += m.elements * m.count
    return ParamGroups(groups["split"], groups["whole"], groups["expert"])


def layer_biases(
    a: ModelArchitecture, linears: dict[str, tuple[tuple[int, int, str], ...]]
) -> tuple[ParamGroups, ParamGroups]:
    """A dense and an MoE layer's linear biases as Megatron-Core builds them [T], one per output feature of each
    linear (te_linears): the fused QKV's under add_bias_linear or add_qkv_bias (attention.py; the spec's qkv_bias),
    the output projection's and every dense MLP's and routed expert's under add_bias_linear (mlp.py,
    moe/experts.py); MLA's down- and up-projections and the shared experts take none (multi_latent_attention.py;
    shared_experts.py asserts it). A column-parallel linear's bias splits over TP with its weight, a row-parallel
    one's is whole on every TP rank; a routed expert's over EP with the experts (Megatron asserts expert TP 1 for MoE
    under add_bias_linear: transformer_config.py)."""

    def outputs(part: str, split: str) -> float:  # the output features of a part's linears split so
        return float(sum(out for out, _, how in linears.get(part, ()) if how == split))

    out_bias = a.out_bias if a.out_bias is not None else a.linear_bias
    qkv = outputs("attention", "column") if a.mla is None and a.qkv_bias else 0.0
    attention = ParamGroups(qkv, outputs("attention", "row") if out_bias else 0.0)
    if not a.linear_bias:
        return attention, attention
    dense = attention + ParamGroups(outputs("mlp", "column"), outputs("mlp", "row"))
    if a.moe is None:
        return dense, attention
    routed = outputs("moe", "expert_column") + outputs("moe", "expert_row")
    return dense, attention + ParamGroups(0.0, 0.0, routed * a.moe.experts)


def te_linears(
    a: ModelArchitecture, dense_ffn: int, vocab: int
) -> tuple[tuple[str, tuple[tuple[int, int, str], ...]], ...]:
    """Each part's Transformer Engine linear layers as Megatron-Core builds them [W], (out, in, split): attention's
    fused QKV (column) and output projection (row), MLA's duplicated down-projections (multi_latent_attention.py:
    TELinear, parallel_mode "duplicated"), its up-projections and output projection; a dense MLP's fc1 (2 f gated)
    and fc2; an MoE layer's shared experts over TP, one routed expert's over expert TP (TEGroupedLinear: every
    expert's weights one shape) and LatentMoE's duplicated projections (moe_layer.py fc1_latent_proj,
    fc2_latent_proj); Mamba's in_proj (z, x, B, C and dt) and out_proj; MTP's eh_proj (2h -> h); and the
    output layer over the padded `vocab` (Megatron's ColumnParallelLinear, which takes TE's placeholder too)."""
    h, gate = a.hidden, 2 if a.gated_mlp else 1
    if a.mla is not None:
        m = a.mla
        d_qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        query = (
            ((m.q_lora_rank, h, "whole"), (a.heads * d_qk, m.q_lora_rank, "column"))
            if m.q_lora_rank
            else ((a.heads * d_qk, h, "column"),)
        )
        attention = (
            *query,
            (m.kv_lora_rank + m.qk_rope_head_dim, h, "whole"),
            (a.heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, "column"),
            (h, a.heads * m.v_head_dim, "row"),
        )
    else:
        qkv = a.heads * a.d_head + a.n_kv_heads * (a.d_head + a.d_value)
        attention = ((qkv, h, "column"), (h, a.heads * a.d_value, "row"))
    parts: list[tuple[str, tuple[tuple[int, int, str], ...]]] = [
        ("attention", attention),
        ("mlp", ((gate * dense_ffn, h, "column"), (h, dense_ffn, "row")) if dense_ffn else ()),
        ("mtp", ((h, 2 * h, "column"),)),
        ("output", ((vocab, h, "column"),)),
    ]
    if a.moe is not None:
        e, io = a.moe, a.moe.expert_io(h)
        shared = e.shared * e.shared_width if e.shared else 0
        shared_linears = ((gate * shared, h, "column"), (h, shared, "row")) if shared else ()
        routed = ((gate * e.ffn, io, "expert_column"), (io, e.ffn, "expert_row"))
        latent = ((e.latent, h, "whole"), (h, e.latent, "whole")) if e.latent else ()
        parts.append(("moe", shared_linears + routed + latent))
    if a.ssm is not None:
        s = a.ssm
        in_proj = 2 * s.inner + 2 * s.groups * s.state + (s.heads or 0)
        parts.append(("mamba", ((in_proj, h, "column"), (h, s.inner, "row"))))
    return tuple(parts)


@frozen
class AttentionWidths:
    """ModelShape's attention widths [A], per token."""

    query: int
    key: int
    value: int
    context: int
    groups: int
    latent_bytes: float = 0.0
    latent_recomputed_bytes: float = 0.0


def attention_widths(a: ModelArchitecture) -> AttentionWidths:
    """Attention's widths [A]: GQA's from heads, query groups and head dims; MLA's every head's Q and K
    (qk_head_dim + qk_pos_emb_head_dim) and V, and its latents (activations.mla_latent_tensors)."""
    if a.mla is None:
        return AttentionWidths(
            a.heads * a.d_head, a.n_kv_heads * a.d_head, a.n_kv_heads * a.d_value, a.heads * a.d_value, a.n_kv_heads
        )
    m = a.mla
    d_qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    latents = mla_latent_tensors(m)
    return AttentionWidths(
        a.heads * d_qk,
        a.heads * d_qk,
        a.heads * m.v_head_dim,
        a.heads * m.v_head_dim,
        a.heads,
        latent_bytes=sum(t.bytes_per_token for t in latents),
        latent_recomputed_bytes=sum(t.bytes_per_token for t in latents if t.module == "mla_up_proj"),
    )


def layout_memory_for(
    spec: ModelSpec,
    layout: MemoryLayout,
    seq_len: int,
    micro_batch: int = 1,
    num_microbatches: int | None = None,
    mtp_layers: int = 0,
    vocab_divisible_by: int = VOCAB_DIVISIBLE_BY,
) -> LayoutMemory:
    """Memory per GPU of a dpcost model spec under `layout`, as Megatron accounts it [M]."""
    if spec.architecture is None:
        raise ValueError(f"{spec.name}: layout memory needs the model's architecture, not only its parameter count")
    shape = model_shape(spec.architecture, layout.tp, mtp_layers, vocab_divisible_by, layout.muon)
    return layout_memory(shape, layout, seq_len, micro_batch, num_microbatches)
