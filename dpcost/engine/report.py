"""The Report: what `dpcost estimate` found, as frozen classes that are also its JSON contract (dpcost.contract).

`dpcost estimate --format json` is `EstimateReport.model_dump(mode="json")`, without `compute` when it is null (the
default flops model's output has no key it cannot fill); `dpcost schema estimate` prints its JSON Schema, read off
the pydantic model mirrored from these classes; docs/json.md is generated from that schema. Bytes are integers,
times seconds, rates per second. Every field is documented here once. Bump SCHEMA_VERSION on any incompatible change
and say how to migrate in docs/json.md.
"""

# No `from __future__ import annotations` here: dpcost.contract reads each annotation as its class is built.

from typing import Literal

from dpcost.contract import Contract, Field

# Memory.note's words for --no-repeat-kv, which the table renders beside the checkpointing policy
GROUPED_KV_NOTE = "K and V read grouped by the flash kernel where it can (--no-repeat-kv), not copied per query head"

__all__ = [
    "SCHEMA_VERSION",
    "Advice",
    "AlgorithmTime",
    "BreakdownTerm",
    "CallsByAlgorithm",
    "CollectiveRow",
    "CollectiveUse",
    "Communication",
    "ComputeBreakdown",
    "ComputePart",
    "ComputePartName",
    "ConfigSettingRow",
    "DeepSpeedRow",
    "EstimateReport",
    "GroupRow",
    "LayoutCallRow",
    "LayoutReport",
    "Memory",
    "MemoryReport",
    "ModelInfo",
    "PipelineStageRow",
    "PlanResult",
    "PlanRow",
    "SearchCounts",
    "Serving",
    "Setup",
    "StageRow",
    "Summary",
    "SweepRow",
    "TierBytes",
    "TierUse",
    "Time",
    "TopologyInfo",
    "TrainingConfigReport",
    "VariantRow",
    "WholeMessage",
]

SCHEMA_VERSION: Literal[2] = 2

ComputePartName = Literal["matmuls", "attention", "memory-bound", "optimizer"]  # engine/ops.py PARTS


Bound = Literal["compute", "communication", "pipeline bubble", "host"]  # what a step spends most of its time on


class ModelInfo(Contract):
    name: str = Field(description="catalog name (or the spec's name)")
    title: str = Field(description="the model's full name")
    params_total: int = Field(description="derived from the architecture (engine/params.py)")
    params_active: int = Field(description="per token, input embedding included (Mistral's, Qwen's, Meta's count)")
    params_active_excl_embedding: int = Field(description="per token, without the input lookups (DeepSeek, OpenAI)")
    params_mtp: int = Field(description="DeepSeek's multi-token-prediction module, counted apart and not trained")


class TopologyInfo(Contract):
    name: str = Field(description="catalog name (or the spec's name)")
    gpu: str = Field(description="the GPU's name")
    hbm_bytes: int = Field(
        description="HBM per GPU: what CUDA reports where the topology gives it (an 80GB H100: 79.11 GiB), else the "
        "datasheet's (80 GB = 80e9 bytes)"
    )


class Setup(Contract):
    """The plan as costed; `*_chosen` says dpcost chose the value (the flag was auto)."""

    mode: Literal["train", "inference"] = Field(description="train, or inference (serving)")
    framework: str = Field(description="the framework whose schedule and accounting were costed, or none")
    dp: int = Field(description="data-parallel size: GPUs, one replica each")
    nodes: int = Field(description="NVLink domains the DP group spans")
    gpus_per_node: int = Field(description="GPUs of the DP group in one NVLink domain")
    zero_stage: int = Field(description="ZeRO stage 0-3 costed (3 = FSDP FULL_SHARD)")
    zero_stage_chosen: bool = Field(description="dpcost chose the stage (--zero auto)")
    grad_dtype: str = Field(description="the communicated gradients' dtype")
    micro_batch: int = Field(
        description="sequences per GPU per micro-batch (inference: concurrent sequences per replica)"
    )
    accumulation: int = Field(description="gradient accumulation steps")
    seq_len: int = Field(description="tokens per sequence")
    global_batch: int = Field(description="B = micro_batch x accumulation x dp sequences")
    tokens_per_step: int = Field(description="global_batch x seq_len")
    recompute: str = Field(description="activation recomputation: none, selective, op or full")
    recompute_chosen: bool = Field(description="dpcost chose the recomputation (--recompute auto)")
    recompute_layers: int = Field(default=1, description="the recomputation applies to every K-th block")
    recompute_block: int | None = Field(
        default=None,
        description="full recomputation of the first N layers of each pipeline chunk alone (--recompute-block; "
        "absent when not given)",
    )
    compile: bool = Field(default=False, description="torch.compile: element-wise intermediates are not stored")
    loss_impl: str = Field(default="upcast", description="how the loss holds the logits (--loss-impl)")
    recipe: str = Field(description="model-state recipe: zero-paper, deepspeed or megatron")
    optimizer: str = Field(description="optimizer whose states are counted")
    offload: str = Field(description="what is offloaded to host memory: none, optimizer or params")
    bucket_bytes: int = Field(description="gradient bucket size; 0 under FSDP, which reduces per wrapped unit")
    mfu: float = Field(
        description="--compute-model flops: the --mfu input, the share of the compute dtype's dense peak every FLOP "
        "sustains; ops: the matmuls' share (--mfu, else the GPU's sustained rate)"
    )
    compute_model: str = Field(default="flops", description="flops (one efficiency for every FLOP) or ops (op by op)")
    skew: float = Field(description="the slowest rank's extra compute (--skew)")
    compute_dtype: str = Field(description="the matmuls' precision: bf16, fp8 or nvfp4 (MFU is against its peak)")
    overlap_slowdown: float = Field(
        description="compute slowdown while a collective overlaps it: --overlap-slowdown, else the share of the "
        "GPU's SMs the overlapped calls' kernels hold (NCCL's channels), weighted by the compute each overlaps"
    )
    sync_jitter: float = Field(
        description="seconds per sqrt(s) of compute: one standard deviation of a rank's drift after one second"
    )
    keep_full_grads: bool = Field(description="stages 2-3 accumulate unsharded gradients and reduce once per step")
    flash_attention: bool = Field(description="attention scores are not stored (flash attention)")


class TierUse(Contract):
    tier: str = Field(description="the topology tier's name")
    bytes_per_gpu: int = Field(description="bytes each GPU moves over this tier's links")
    seconds: float = Field(description="those bytes over the tier's effective bandwidth")
    nested: bool = Field(description="these bytes also crossed a lower network tier (counted there)")


class AlgorithmTime(Contract):
    algorithm: str = Field(
        description="NCCL's algorithm (ring, tree, nvls, nvls_tree, collnet, pat) or the hierarchical what-if"
    )
    protocol: str = Field(description="NCCL protocol: ll, ll128 or simple")
    seconds: float = Field(description="one call of the whole message")
    what_if: bool = Field(description="an algorithm NCCL does not run (hierarchical), priced for comparison")


class WholeMessage(Contract):
    """The whole message as one NCCL call: its algorithm, where its time goes, and the alternatives."""

    algorithm: str = Field(description="NCCL's pick of its candidates (or the tuner plugin's, or the forced one)")
    protocol: str = Field(description="its protocol")
    seconds: float = Field(description="latency_seconds + bandwidth_seconds")
    latency_seconds: float = Field(description="call overhead, base and per-step latencies")
    bandwidth_seconds: float = Field(description="the slowest tier's bytes over its bandwidth")
    algbw: float = Field(description="nccl-tests' algorithm bandwidth, bytes/s")
    busbw: float = Field(description="nccl-tests' bus bandwidth, bytes/s")
    tiers: list[TierUse] = Field(description="bytes and time on each tier")
    alternatives: list[AlgorithmTime] = Field(description="every applicable algorithm, NCCL's fastest first")
    note: str = Field(default="", description="how the ranks sit when NVLink domains are part-filled")


class CallsByAlgorithm(Contract):
    algorithm: str = Field(description="algorithm/protocol, e.g. ring/simple")
    calls: int = Field(description="calls per step that ran with it")


class CollectiveUse(Contract):
    """One kind of collective in a step."""

    op: str = Field(description="all_reduce, reduce_scatter or all_gather")
    purpose: str = Field(description="what it carries: gradients, or parameters gathered for a pass")
    bytes: int = Field(description="one occurrence, e.g. the whole gradient")
    bytes_sent_per_rank: int = Field(description="per occurrence, nccl-tests' bus volume")
    occurrences: int = Field(description="per step")
    calls: int = Field(description="NCCL calls per step (buckets or blocks)")
    algorithm: str = Field(description="the algorithm most of its calls ran")
    calls_by_algorithm: list[CallsByAlgorithm] = Field(
        description="the algorithm/protocol of the step's calls, most calls first"
    )
    seconds: float = Field(description="per step, all its calls")
    whole_message: WholeMessage = Field(description="the whole message as one call, for scale")


class TierBytes(Contract):
    tier: str = Field(description="the topology tier's name")
    bytes_per_gpu: int = Field(description="bytes each GPU sends over its links per step")


class GroupRow(Contract):
    """One process group of a layout or of hybrid sharding, as NCCL sees it (layout.py, placement.place_group)."""

    group: str = Field(
        description="tp, cp, pp (two neighbouring stages), dp-cp (the dense gradients), ep, edp; hybrid sharding: "
        "shard, replica"
    )
    ranks: int = Field(description="GPUs in one such group")
    ranks_per_domain: float = Field(description="of them in one NVLink domain (NCCL's ranks per node)")
    domains: int = Field(description="NVLink domains it spans (NCCL's nNodes)")
    tiers: list[str] = Field(description="the fabric tiers its traffic crosses")


class Communication(Contract):
    primitives: str = Field(
        description="the step's collectives as NCCL names them: AllReduce (stage 0), ReduceScatter + AllGather "
        "(stages 1-3), AllReduce + AllGather (DeepSpeed's stages 1-2)"
    )
    frequency: str = Field(description="how often they run, with accumulation")
    gradient_bytes: int = Field(description="|theta| x gradient dtype")
    bytes_sent_per_rank: int = Field(description="per step")
    seconds_per_step: float = Field(description="every call of the step summed")
    collectives: list[CollectiveUse] = Field(description="one entry per kind of collective")
    shard_group: int | None = Field(
        default=None, description="--shard-group: the GPUs each shard group holds (hybrid sharding); absent otherwise"
    )
    bytes_per_tier: list[TierBytes] | None = Field(
        default=None, description="with --shard-group: bytes each GPU sends per step over each tier; absent otherwise"
    )
    groups: list[GroupRow] | None = Field(
        default=None,
        description="with --shard-group: the shard group and the replica group, as placed; absent otherwise",
    )


class StageRow(Contract):
    """Memory per GPU at one ZeRO stage."""

    stage: int = Field(description="ZeRO stage")
    params_bytes: int = Field(description="parameters (sharded from stage 3)")
    grads_bytes: int = Field(description="gradients (sharded from stage 2)")
    optimizer_bytes: int = Field(description="optimizer states and master weights (sharded from stage 1)")
    activations_bytes: int = Field(
        description="one micro-batch's activations kept for the backward under the recomputation costed, the loss's "
        "included"
    )
    transient_bytes: int = Field(
        description="what the peak phase adds: the loss's working tensors, or a layer's recomputation and gradients"
    )
    buffers_bytes: int = Field(
        description="buckets in flight, DDP's bucket copy (stage 0), ZeRO-3's gathered units, the GEMM libraries' "
        "workspaces"
    )
    allocated_bytes: int = Field(
        description="the peak of torch.cuda.memory_allocated: the columns above at the peak phase"
    )
    fragmentation_bytes: int = Field(
        description="reserved beyond allocated: the step's largest transient tensor, and the last step's gradient "
        "blocks the activations cannot reuse"
    )
    reserved_bytes: int = Field(
        description="the peak of torch.cuda.memory_reserved over the step's phases: allocated + fragmentation"
    )
    context_bytes: int = Field(description="CUDA context and NCCL buffers, outside PyTorch's allocator")
    overhead_bytes: int = Field(description="fragmentation + context")
    total_bytes: int = Field(description="reserved + context: the device's memory in use, against hbm_bytes")
    peak_phase: Literal["forward", "backward", "optimizer step"] = Field(
        description="the phase of the step where allocated memory peaks"
    )
    cpu_bytes: int = Field(description="offloaded to host memory")
    fits: bool = Field(description="total_bytes <= HBM")
    max_micro_batch: int = Field(description="the largest micro-batch that still fits at this stage")

    @property
    def model_states_bytes(self) -> int:
        return self.params_bytes + self.grads_bytes + self.optimizer_bytes


class Memory(Contract):
    hbm_bytes: int = Field(description="HBM per GPU")
    recipe: str = Field(description="the recipe's description")
    recompute: str = Field(description="the recomputation the activations assume")
    note: str = Field(default="", description="what was chosen or left out")
    stages: list[StageRow] = Field(description="ZeRO stages 0-3")


class BreakdownTerm(Contract):
    term: str = Field(description="compute, exposed <op>, or a loss at scale")
    seconds: float = Field(description="per step")


class Time(Contract):
    """The training step; one micro-batch's forward and backward, then per step."""

    forward_seconds: float = Field(description="one micro-batch's forward at the --mfu rate")
    backward_seconds: float = Field(description="recomputation included")
    compute_seconds: float = Field(description="per step, all micro-batches, stragglers included")
    comm_seconds: float = Field(description="per step, every call summed")
    ideal_seconds: float = Field(description="each collective hidden behind what it can overlap: max(compute, comm)")
    step_seconds: float = Field(
        description="the framework's schedule (buckets and block gathers as issued) plus the losses at scale"
    )
    serial_seconds: float = Field(
        description="compute + comm, nothing overlapped (a layout's: + its bubble and the MoE layers' host wait)"
    )
    exposed_comm_seconds: float = Field(
        description="collective time the compute waits for (the breakdown's exposed terms)"
    )
    losses_seconds: float = Field(
        description="what real runs lose beyond the schedule: overlap slowdown, jitter and the slowest GPU's rate"
    )
    bound: Bound = Field(
        description="what the step spends most of its time on: compute, communication left exposed, (a layout "
        "with PP) the pipeline's bubble, or (a layout's MoE layers) waiting for the host to launch them"
    )
    tokens_per_second: float = Field(description="tokens per step / step_seconds")
    mfu: float = Field(
        description="model FLOPs per second over the compute dtype's dense peak (recomputation not counted)"
    )
    scaling_efficiency: float = Field(description="compute / step: against one GPU with the same per-GPU batch")
    straggler_seconds: float = Field(description="per step, from --skew")
    breakdown: list[BreakdownTerm] = Field(
        description="step_seconds as a sum: compute, each collective's exposed time, and the losses at scale"
    )


class ComputePart(Contract):
    """One part of one GPU's compute under the per-op model (engine/ops.py PARTS)."""

    part: ComputePartName = Field(
        description="matmuls; attention (the flash kernel); memory-bound ops (norms, activations, rotary, residual "
        "adds, the embedding, the loss); or the optimizer step"
    )
    layer_forward_seconds: float = Field(
        description="one micro-batch's forward through the mean of the model's layers; 0 for the optimizer"
    )
    layer_backward_seconds: float = Field(description="that layer's backward, its recomputation apart")
    layer_recompute_seconds: float = Field(
        description="the forward ops the recomputation policy runs again in that layer's backward"
    )
    seconds_per_step: float = Field(
        description="every micro-batch's forward, backward and recomputation, the embedding, head and loss "
        "included; the optimizer step once"
    )
    share: float = Field(description="seconds_per_step / compute.single_gpu_step_seconds")
    flops_per_step: float = Field(
        description="FLOPs executed per step as the kernels count them (flash attention's causal half and its "
        "backward's recomputed scores), recomputation included; 0 for memory-bound ops and the optimizer, priced by "
        "their bytes, but Muon's Newton-Schulz matmuls at the optimizer step"
    )


class ComputeBreakdown(Contract):
    """--compute-model ops: where one GPU's compute goes, the single-GPU step it implies, and MFU and HFU
    (engine/utilization.py)."""

    parts: list[ComputePart] = Field(description="matmuls, attention, memory-bound, optimizer")
    single_gpu_step_seconds: float = Field(
        description="one GPU's step with no communication and no straggler: the parts summed"
    )
    model_flops_per_step: float = Field(
        description="one GPU's model FLOPs per step: PaLM's 6N + 12LHQT per token (appendix B)"
    )
    hardware_flops_per_step: float = Field(
        description="model FLOPs plus the recomputation's (Korthikanti et al. 2022, section 6)"
    )
    peak_flops: float = Field(description="the compute dtype's dense peak per GPU, FLOP/s")
    mfu: float = Field(description="model_flops_per_step / (time.step_seconds x peak_flops): time.mfu")
    hfu: float = Field(
        description="hardware_flops_per_step / (time.step_seconds x peak_flops); equal to mfu without recomputation"
    )
    single_gpu_mfu: float = Field(description="model_flops_per_step / (single_gpu_step_seconds x peak_flops)")
    single_gpu_hfu: float = Field(description="hardware_flops_per_step / (single_gpu_step_seconds x peak_flops)")


class Serving(Contract):
    """Inference: replicas serve independent requests."""

    weights_bytes: int = Field(description="bf16 weights of one replica")
    kv_cache_bytes: int = Field(description="KV cache for micro_batch sequences of seq_len tokens")
    overhead_bytes: int = Field(description="context and fragmentation allowance")
    total_bytes: int = Field(description="per replica")
    per_gpu_bytes: int = Field(description="per GPU of the replica")
    fits: bool = Field(description="a replica fits on one GPU: pure data parallelism")
    gpus_per_replica: int = Field(description="a power of two: more than one means tensor or pipeline parallelism")
    replicas: int = Field(description="dp // gpus_per_replica")
    tokens_per_second_per_replica: float = Field(
        description="decode throughput: the slower of compute and HBM reads per token step"
    )
    tokens_per_second: float = Field(description="replicas x per replica")
    bound: str = Field(description="compute, or memory bandwidth")


class Advice(Contract):
    """A warning in plain words, with a stable code for CI to match (docs/json.md lists them)."""

    code: str = Field(description="stable code (docs/json.md lists them)")
    message: str = Field(description="the advice in words, its action included")
    action: str = Field(default="", description="what to do about it, alone; empty where there is nothing to do")


class Summary(Contract):
    """The answer first: the plan, whether it fits, the step that counts, what binds it, and the warning to read
    first (engine/verdict.py). Every figure repeats one of the report's own."""

    verdict: str = Field(description="the answer in one line: fits or not, and the step time (or decode rate)")
    plan: str = Field(description="the plan costed: stage, recomputation, framework, batch (or replicas)")
    fits: bool = Field(description="the plan fits in GPU memory (what --check and require_fit test)")
    memory_bytes: int = Field(
        description="memory per GPU of the plan costed (serving: one replica's, all of it where it needs several GPUs)"
    )
    hbm_bytes: int = Field(description="HBM per GPU")
    headroom_bytes: int = Field(description="HBM left free per GPU; 0 when it does not fit")
    shortfall_bytes: int = Field(description="memory beyond HBM per GPU; 0 when it fits")
    max_micro_batch: int | None = Field(description="the largest micro-batch that fits at the stage; null in inference")
    step_seconds: float | None = Field(description="the step that counts: time.step_seconds; null in inference")
    tokens_per_second: float = Field(description="training: tokens per step / step; serving: decode, all replicas")
    mfu: float | None = Field(description="time.mfu; null in inference")
    scaling_efficiency: float | None = Field(description="time.scaling_efficiency; null in inference")
    bound: str = Field(description="what binds the step: compute or communication (serving: compute or memory)")
    bound_reason: str = Field(description="why, in words")
    top_warning: Advice | None = Field(description="the warning to read first, with its action; null if none")


class LayoutCallRow(Contract):
    """One model-parallel call (engine/layout_step.py) on one GPU of the most loaded stage."""

    dimension: str = Field(description="tp, cp, pp or ep")
    purpose: str = Field(description="what it carries")
    op: str = Field(description="all_reduce, all_gather, reduce_scatter, send_recv or all_to_all")
    group: str = Field(description="the group it runs on")
    message_bytes: int = Field(description="one call, as nccl-tests counts its size")
    calls_per_micro_batch: int = Field(description="per micro-batch")
    seconds_per_call: float = Field(description="one call on its group")
    overlapped: bool = Field(description="runs alongside compute, exposed only beyond what it hides behind")


class PipelineStageRow(Contract):
    """One pipeline stage on one GPU."""

    stage: int = Field(description="from 0")
    layers: int = Field(description="transformer layers it holds")
    params: int = Field(description="parameters on one GPU: dense over TP, experts over ETP x EP")
    forward_flops_per_token: float = Field(description="its forward FLOPs per token of the micro-batch, per GPU")
    memory_bytes: int = Field(description="Megatron's weights, optimizer and activations in flight, per GPU")


class LayoutReport(Contract):
    """GPUs = TP x CP x PP x DP: the groups, the model-parallel calls, the stages and the bubble."""

    gpus: int = Field(description="TP x CP x PP x DP")
    nodes: int = Field(description="NVLink domains the job spans")
    tp: int = Field(description="tensor-parallel size")
    cp: int = Field(description="context-parallel size")
    pp: int = Field(description="pipeline stages")
    dp: int = Field(description="data-parallel size")
    ep: int = Field(description="expert-parallel size")
    expert_tp: int = Field(description="expert tensor-parallel size")
    expert_dp: int = Field(description="the experts' data-parallel size: GPUs / (ETP x EP x PP)")
    order: str = Field(description="rank order, fastest-varying first")
    virtual_stages: int = Field(description="model chunks per pipeline rank")
    micro_batches: int = Field(description="per pipeline per step: global batch / (DP x micro-batch)")
    sequence_parallel: bool = Field(description="Megatron's sequence parallelism")
    tp_comm_overlap: bool = Field(description="TP's collectives overlapped with the matmuls")
    pp_comm_overlap: bool = Field(description="the pipeline's send/recv overlapped with the next chunk's compute")
    pp_send_comm: str = Field(
        "pair", description="the communicator the pipeline's send/recv run on: group (the PP group's) or pair"
    )
    cp_impl: str = Field(
        description="p2p (ring attention), all_gather, a2a (DeepSpeed-Ulysses' all-to-alls) or torch (torch's "
        "context_parallel, as torchtitan runs it)"
    )
    bubble_seconds: float = Field(description="the pipeline's idle time per step: (PP - 1) / V micro-batch slots")
    paced_stage: int = Field(description="the stage with the most compute, which sets the pipeline's pace")
    memory_stage: int = Field(description="the stage with the most memory per GPU, which the memory rows show")
    groups: list[GroupRow] = Field(description="each group kind, as placed")
    calls: list[LayoutCallRow] = Field(description="the model-parallel calls per micro-batch")
    exposed: list[BreakdownTerm] = Field(description="seconds per step each dimension adds to the critical path")
    stages: list[PipelineStageRow] = Field(description="every pipeline stage")
    mtp_layers: int | None = Field(
        default=None, description="MTP modules trained on the last stage (--mtp-layers); absent when none are"
    )
    moe_host_seconds: float | None = Field(
        default=None,
        description="the host time of one MoE layer's forward and backward for a micro-batch, which the layer takes "
        "at least (--moe-host-time, else engine/host.py's); absent for a model without MoE layers",
    )


class ConfigSettingRow(Contract):
    """One key of a training config read by --from."""

    key: str = Field(description="the key as the file names it")
    value: str = Field(description="its value as the file gives it")
    became: str = Field(description="the dpcost flag and value it became; empty when it was left out")
    note: str = Field(description="how it was converted, why it was left out, or the flag that overrode it")


class TrainingConfigReport(Contract):
    """--from FILE: the training config the plan was read from, key by key."""

    file: str = Field(description="the file given to --from")
    kind: str = Field(description="what dpcost read it as: DeepSpeed JSON, torchtitan TOML, ...")
    settings: list[ConfigSettingRow] = Field(description="every key read, in the file's order")


class VariantRow(Contract):
    """One way to run the plan's data parallelism (engine/variants.py): what it sends, its step and its memory."""

    name: str = Field(description="plain DP, hybrid sharding, ZeRO++, PowerSGD, 1-bit Adam, DiLoCo, ...")
    flags: str = Field(description="the estimate flags that ask for it")
    top_tier: str = Field(
        description="the tier every row is compared on: the plain plan's slowest per GPU (on a fabric whose network "
        "tiers run at one speed, the first, which every byte leaving a node crosses)"
    )
    top_tier_bytes: int = Field(description="bytes per GPU per step over that tier")
    comm_seconds: float = Field(description="its data-parallel calls per step")
    exposed_comm_seconds: float = Field(description="of them, not hidden behind compute")
    step_seconds: float = Field(description="the step with it")
    memory_bytes: int = Field(description="memory per GPU with it")
    added_memory_bytes: int = Field(description="what it adds to the plan it changes: error feedback, copies")
    added_memory_for: str = Field(description="what that added memory holds")
    memory: StageRow | None = Field(
        default=None,
        description="the stage table's row with it: the ZeRO stage it runs on, what it adds held in its column "
        "(params, grads or optimizer) through the step; null for a variant that adds none",
    )
    recompute: str | None = Field(
        default=None, description="the activation recomputation that row assumes: the plan it changes chooses its own"
    )
    added_compute_seconds: float = Field(description="its own compute per step (PowerSGD's matmuls)")
    scaling_efficiency: float = Field(description="compute / step")
    note: str = Field(description="what it assumes; its effect on convergence is not modelled")


class EstimateReport(Contract):
    """`dpcost estimate --format json`."""

    schema_version: Literal[2] = Field(default=SCHEMA_VERSION, description="2; bumped on any incompatible change")
    model: ModelInfo = Field(description="the model and its derived counts")
    topology: TopologyInfo = Field(description="the topology")
    setup: Setup = Field(description="the plan as costed")
    communication: Communication = Field(description="the step's collectives")
    memory: Memory = Field(description="memory per GPU at every ZeRO stage")
    time: Time | None = Field(description="null in inference mode")
    compute: ComputeBreakdown | None = Field(
        default=None,
        description="training priced op by op (the default): where the compute goes, MFU and HFU; absent otherwise",
    )
    inference: Serving | None = Field(description="null in training mode")
    layout: LayoutReport | None = Field(
        default=None, description="with --tp, --cp, --pp or --ep: the layout, its groups and calls; absent otherwise"
    )
    warnings: list[Advice] = Field(description="coded advice, in the order a reader should see it")
    summary: Summary = Field(description="the answer first: what the tables and the verdict block lead with")
    from_config: TrainingConfigReport | None = Field(
        default=None, description="with --from: the training config read, key by key; absent otherwise"
    )
    variants: list[VariantRow] | None = Field(
        default=None,
        description="with --zeropp, --compression or --sync-every: the plain plan and the variant; with "
        "--compare-variants: every variant; absent otherwise",
    )

    @property
    def fits(self) -> bool:
        """The plan fits in GPU memory (what --check tests)."""
        return self.summary.fits


# ------------------------------------------------------------------------------------------------ other outputs


class SweepRow(Contract):
    """One DP size of `dpcost sweep` (its JSON is a list of these; CSV the same columns)."""

    dp: int = Field(description="data-parallel size")
    nodes: int = Field(description="NVLink domains the job spans (with a layout, all its GPUs; else the DP group)")
    global_batch: int = Field(description="sequences per step")
    accumulation: int = Field(description="micro-batches per step")
    zero_stage: int = Field(description="the stage costed")
    recompute: str = Field(description="the recomputation costed")
    step_seconds: float = Field(description="as estimate's time.step_seconds")
    compute_seconds: float = Field(description="as estimate's time.compute_seconds")
    exposed_comm_seconds: float = Field(description="as estimate's time.exposed_comm_seconds")
    losses_seconds: float = Field(description="as estimate's time.losses_seconds")
    comm_seconds: float = Field(description="as estimate's time.comm_seconds")
    ideal_seconds: float = Field(description="as estimate's time.ideal_seconds")
    serial_seconds: float = Field(description="as estimate's time.serial_seconds")
    scaling_efficiency: float = Field(description="compute / step")
    tokens_per_second: float = Field(description="throughput")
    mfu: float = Field(description="model FLOPs utilisation")
    memory_bytes: int = Field(description="per GPU at the chosen stage")
    fits: bool = Field(description="the plan fits in HBM")
    bound: str = Field(description="compute or communication")
    gpus: int | None = Field(default=None, description="with a layout: TP x CP x PP x DP; absent otherwise")
    bubble_seconds: float | None = Field(
        default=None,
        description="with a layout: the pipeline's bubble per step (layout.bubble_seconds); absent otherwise",
    )

    @classmethod
    def of(cls, r: EstimateReport) -> "SweepRow":
        s, t = r.setup, r.time
        if t is None:
            raise ValueError("a sweep costs training plans")
        m = r.memory.stages[s.zero_stage]
        return cls(
            dp=s.dp,
            nodes=s.nodes if r.layout is None else r.layout.nodes,
            global_batch=s.global_batch,
            accumulation=s.accumulation,
            zero_stage=s.zero_stage,
            recompute=s.recompute,
            step_seconds=t.step_seconds,
            compute_seconds=t.compute_seconds,
            exposed_comm_seconds=t.exposed_comm_seconds,
            losses_seconds=t.losses_seconds,
            comm_seconds=t.comm_seconds,
            ideal_seconds=t.ideal_seconds,
            serial_seconds=t.serial_seconds,
            scaling_efficiency=t.scaling_efficiency,
            tokens_per_second=t.tokens_per_second,
            mfu=t.mfu,
            memory_bytes=m.total_bytes,
            fits=m.fits,
            bound=t.bound,
            gpus=None if r.layout is None else r.layout.gpus,
            bubble_seconds=None if r.layout is None else r.layout.bubble_seconds,
        )


class CollectiveRow(Contract):
    """One size of `dpcost collective`, in nccl-tests' vocabulary (JSON: a list of these)."""

    op: str = Field(description="the collective")
    size_bytes: int = Field(description="message size, as nccl-tests counts it")
    time_us: float = Field(description="predicted time of one call")
    algbw_GBps: float = Field(description="size / time, GB/s")
    busbw_GBps: float = Field(description="algbw x nccl-tests' bus factor, GB/s")
    algorithm: str = Field(description="NCCL's pick of its candidates (or the tuner plugin's, or the forced one)")
    protocol: str = Field(description="its protocol")
    alternatives_us: dict[str, float] = Field(description="every applicable algorithm's time, what-ifs included")
    measured_us: dict[str, float] = Field(
        default_factory=dict, description="--compare: by column (out-of-place, in-place)"
    )
    error: dict[str, float] = Field(default_factory=dict, description="--compare: predicted / measured - 1 by column")


class DeepSpeedRow(Contract):
    stage: int = Field(description="2 or 3")
    offload: str = Field(description="none, optimizer or params")
    zero_init: bool | None = Field(description="ZeRO-3 zero_init, for the stage-3 rows")
    per_cpu_bytes: int = Field(description="DeepSpeed's per-CPU estimate")
    per_gpu_bytes: int = Field(description="DeepSpeed's per-GPU estimate")


class MemoryReport(Contract):
    """`dpcost memory --format json`."""

    schema_version: Literal[2] = Field(default=SCHEMA_VERSION, description="2")
    model: str = Field(description="model name")
    params: int = Field(description="total parameters")
    dp: int = Field(description="data-parallel size")
    hbm_bytes: int = Field(description="HBM per GPU")
    recipe: str = Field(description="the recipe flag")
    recompute: str = Field(description="the recomputation costed")
    note: str = Field(description="what was chosen or left out")
    stages: list[StageRow] = Field(description="ZeRO stages 0-3")
    deepspeed: list[DeepSpeedRow] = Field(description="DeepSpeed's own estimators (--recipe deepspeed)")


class PlanRow(Contract):
    """One plan `dpcost plan` found: its layout and choices, what it costs, and why it ranks where it does."""

    rank: int = Field(description="1 is the fastest plan that fits")
    tp: int = Field(description="tensor-parallel size")
    cp: int = Field(description="context-parallel size")
    pp: int = Field(description="pipeline stages")
    dp: int = Field(description="data-parallel size")
    ep: int = Field(description="expert-parallel size")
    virtual_stages: int = Field(description="model chunks per pipeline rank")
    order: str = Field(description="rank order, fastest-varying first")
    framework: str = Field(description="whose schedule and memory accounting the plan is costed with")
    zero_stage: int = Field(description="ZeRO stage (a layout: Megatron's distributed optimizer is 1)")
    shard_group: int | None = Field(description="hybrid sharding: GPUs per shard group; null shards over all of DP")
    recompute: str = Field(description="activation recomputation")
    micro_batch: int = Field(description="sequences per GPU per micro-batch")
    accumulation: int = Field(description="micro-batches per step")
    bucket_bytes: int = Field(description="gradient bucket size costed")
    step_seconds: float = Field(description="as estimate's time.step_seconds")
    tokens_per_second: float = Field(description="throughput")
    mfu: float = Field(description="model FLOPs utilisation")
    memory_bytes: int = Field(description="memory per GPU (the most loaded stage)")
    headroom_bytes: int = Field(description="HBM left free per GPU")
    bound: str = Field(description="what binds the step: compute or communication")
    bound_reason: str = Field(description="why, in words")
    ahead_of_next: str = Field(description="why it beats the next plan: what the next one loses, and gives up; '' last")
    command: str = Field(description="the `dpcost estimate` command that costs this plan alone")


class SearchCounts(Contract):
    """How much the search looked at, and why it set plans aside."""

    candidates: int = Field(description="plans enumerated")
    invalid: int = Field(description="refused by a layout's own rules")
    over_memory: int = Field(description="set aside by memory (a lower bound, Megatron's formula, or the estimate)")
    slower: int = Field(description="set aside because even at the dense peak they could not beat the best so far")
    priced: int = Field(description="costed by estimate, bucket refinements included")
    seconds: float = Field(description="wall time of the search")


class PlanResult(Contract):
    """`dpcost plan --format json`: the best plans for a model on a cluster, fastest first."""

    schema_version: Literal[1] = Field(default=1, description="1; bumped on any incompatible change")
    model: ModelInfo = Field(description="the model and its derived counts")
    topology: TopologyInfo = Field(description="the topology")
    gpus: int = Field(description="GPUs in the job")
    global_batch: int = Field(description="sequences per step, the same for every plan")
    seq_len: int = Field(description="tokens per sequence")
    memory_limit_bytes: int = Field(description="memory per GPU a plan must fit in (HBM, or --max-memory)")
    verdict: str = Field(description="the answer in one line")
    plans: list[PlanRow] = Field(description="the best plans that fit and hold the limits, fastest first")
    searched: SearchCounts = Field(description="what the search looked at")
    from_config: TrainingConfigReport | None = Field(
        default=None, description="with --from: the training config read, key by key; absent otherwise"
    )
    variants: list[VariantRow] | None = Field(
        default=None, description="with --compare-variants: the best pure-DP plan's variants; absent otherwise"
    )
