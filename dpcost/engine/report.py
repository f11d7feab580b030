"""The Report: what `dpcost estimate` found, as frozen pydantic models that are also its JSON contract.

`dpcost estimate --format json` is `EstimateReport.model_dump_json()`; `dpcost schema estimate` prints its JSON
Schema; docs/json.md is generated from that schema. Bytes are integers, times seconds, rates per second. Every
field is documented here once. Bump SCHEMA_VERSION on any incompatible change and say how to migrate in
docs/json.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SCHEMA_VERSION",
    "Advice",
    "AlgorithmTime",
    "CallsByAlgorithm",
    "CollectiveRow",
    "CollectiveUse",
    "Communication",
    "DeepSpeedRow",
    "EstimateReport",
    "Memory",
    "MemoryReport",
    "ModelInfo",
    "Serving",
    "Setup",
    "StageRow",
    "SweepRow",
    "TierUse",
    "Time",
    "TopologyInfo",
    "WholeMessage",
]

SCHEMA_VERSION: Literal[2] = 2


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelInfo(Contract):
    name: str
    title: str
    params_total: int = Field(description="derived from the architecture (engine/params.py)")
    params_active: int = Field(description="per token, input embedding included (Mistral's, Qwen's, Meta's count)")
    params_active_excl_embedding: int = Field(description="per token, without the input lookups (DeepSeek, OpenAI)")
    params_mtp: int = Field(description="DeepSeek's multi-token-prediction module, counted apart and not trained")


class TopologyInfo(Contract):
    name: str
    gpu: str
    hbm_bytes: int


class Setup(Contract):
    """The plan as costed; `*_chosen` says dpcost chose the value (the flag was auto)."""

    mode: Literal["train", "inference"]
    dp: int
    nodes: int = Field(description="NVLink domains the DP group spans")
    gpus_per_node: int
    zero_stage: int
    zero_stage_chosen: bool
    grad_dtype: str
    micro_batch: int
    accumulation: int
    seq_len: int
    global_batch: int = Field(description="B = micro_batch x accumulation x dp sequences")
    tokens_per_step: int
    recompute: str
    recompute_chosen: bool
    recipe: str
    optimizer: str
    offload: str
    bucket_bytes: int
    mfu: float = Field(description="the --mfu input: fraction of dense BF16 peak the math sustains")
    skew: float
    keep_full_grads: bool
    flash_attention: bool


class TierUse(Contract):
    tier: str
    bytes_per_gpu: int
    seconds: float
    nested: bool = Field(description="these bytes also crossed a lower network tier (counted there)")


class AlgorithmTime(Contract):
    algorithm: str
    protocol: str
    seconds: float
    what_if: bool = Field(description="an algorithm NCCL does not run (hierarchical), priced for comparison")


class WholeMessage(Contract):
    """The whole message as one NCCL call: its algorithm, where its time goes, and the alternatives."""

    algorithm: str
    protocol: str
    seconds: float
    latency_seconds: float
    bandwidth_seconds: float
    algbw: float = Field(description="nccl-tests' algorithm bandwidth, bytes/s")
    busbw: float = Field(description="nccl-tests' bus bandwidth, bytes/s")
    tiers: list[TierUse]
    alternatives: list[AlgorithmTime] = Field(description="every applicable algorithm, NCCL's fastest first")
    note: str = Field("", description="how the ranks sit when NVLink domains are part-filled")


class CallsByAlgorithm(Contract):
    algorithm: str = Field(description="algorithm/protocol, e.g. ring/simple")
    calls: int


class CollectiveUse(Contract):
    """One kind of collective in a step."""

    op: str
    purpose: str
    bytes: int = Field(description="one occurrence, e.g. the whole gradient")
    bytes_sent_per_rank: int = Field(description="per occurrence, nccl-tests' bus volume")
    occurrences: int = Field(description="per step")
    calls: int = Field(description="NCCL calls per step (buckets or blocks)")
    algorithm: str = Field(description="the algorithm most of its calls ran")
    calls_by_algorithm: list[CallsByAlgorithm]
    seconds: float = Field(description="per step, all its calls")
    whole_message: WholeMessage


class Communication(Contract):
    primitives: str
    frequency: str
    gradient_bytes: int = Field(description="|theta| x gradient dtype")
    bytes_sent_per_rank: int = Field(description="per step")
    seconds_per_step: float
    collectives: list[CollectiveUse]


class StageRow(Contract):
    """Memory per GPU at one ZeRO stage."""

    stage: int
    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    buffers_bytes: int
    overhead_bytes: int = Field(description="CUDA/NCCL context and allocator fragmentation allowance")
    total_bytes: int
    cpu_bytes: int = Field(description="offloaded to host memory")
    fits: bool
    max_micro_batch: int = Field(description="the largest micro-batch that still fits at this stage")

    @property
    def model_states_bytes(self) -> int:
        return self.params_bytes + self.grads_bytes + self.optimizer_bytes


class Memory(Contract):
    hbm_bytes: int
    recipe: str
    recompute: str
    note: str = ""
    stages: list[StageRow]


class Time(Contract):
    """The training step; one micro-batch's forward and backward, then per step."""

    forward_seconds: float
    backward_seconds: float = Field(description="recomputation included")
    compute_seconds: float = Field(description="per step, all micro-batches, stragglers included")
    comm_seconds: float = Field(description="per step, every call summed")
    ideal_seconds: float = Field(description="each collective hidden behind what it can overlap: max(compute, comm)")
    step_seconds: float = Field(description="the framework's schedule: buckets and block gathers as issued")
    serial_seconds: float = Field(description="compute + comm, nothing overlapped")
    exposed_comm_seconds: float = Field(description="step - compute")
    bound: Literal["compute", "communication"]
    tokens_per_second: float
    mfu: float = Field(description="model FLOPs per second over dense BF16 peak (recomputation not counted)")
    scaling_efficiency: float = Field(description="compute / step: against one GPU with the same per-GPU batch")
    straggler_seconds: float


class Serving(Contract):
    """Inference: replicas serve independent requests."""

    weights_bytes: int
    kv_cache_bytes: int
    overhead_bytes: int
    total_bytes: int = Field(description="per replica")
    per_gpu_bytes: int
    fits: bool = Field(description="a replica fits on one GPU: pure data parallelism")
    gpus_per_replica: int
    replicas: int
    tokens_per_second_per_replica: float
    tokens_per_second: float
    bound: str


class Advice(Contract):
    """A warning in plain words, with a stable code for CI to match (docs/json.md lists them)."""

    code: str
    message: str


class EstimateReport(Contract):
    """`dpcost estimate --format json`."""

    schema_version: Literal[2] = SCHEMA_VERSION
    model: ModelInfo
    topology: TopologyInfo
    setup: Setup
    communication: Communication
    memory: Memory
    time: Time | None = Field(description="null in inference mode")
    inference: Serving | None = Field(description="null in training mode")
    warnings: list[Advice]

    @property
    def fits(self) -> bool:
        """The plan fits in GPU memory (what --check tests)."""
        if self.inference is not None:
            return self.inference.fits
        return self.memory.stages[self.setup.zero_stage].fits


# ------------------------------------------------------------------------------------------------ other outputs


class SweepRow(Contract):
    """One DP size of `dpcost sweep` (its JSON is a list of these; CSV the same columns)."""

    dp: int
    nodes: int
    global_batch: int
    accumulation: int
    zero_stage: int
    recompute: str
    step_seconds: float
    compute_seconds: float
    exposed_comm_seconds: float
    comm_seconds: float
    ideal_seconds: float
    serial_seconds: float
    scaling_efficiency: float
    tokens_per_second: float
    mfu: float
    memory_bytes: int = Field(description="per GPU at the chosen stage")
    fits: bool
    bound: str

    @classmethod
    def of(cls, r: EstimateReport) -> SweepRow:
        s, t = r.setup, r.time
        if t is None:
            raise ValueError("a sweep costs training plans")
        m = r.memory.stages[s.zero_stage]
        return cls(
            dp=s.dp,
            nodes=s.nodes,
            global_batch=s.global_batch,
            accumulation=s.accumulation,
            zero_stage=s.zero_stage,
            recompute=s.recompute,
            step_seconds=t.step_seconds,
            compute_seconds=t.compute_seconds,
            exposed_comm_seconds=t.exposed_comm_seconds,
            comm_seconds=t.comm_seconds,
            ideal_seconds=t.ideal_seconds,
            serial_seconds=t.serial_seconds,
            scaling_efficiency=t.scaling_efficiency,
            tokens_per_second=t.tokens_per_second,
            mfu=t.mfu,
            memory_bytes=m.total_bytes,
            fits=m.fits,
            bound=t.bound,
        )


class CollectiveRow(Contract):
    """One size of `dpcost collective`, in nccl-tests' vocabulary (JSON: a list of these)."""

    op: str
    size_bytes: int
    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    algorithm: str
    protocol: str
    alternatives_us: dict[str, float] = Field(description="every applicable algorithm's time, what-ifs included")
    measured_us: dict[str, float] = Field(
        default_factory=dict, description="--compare: by column (out-of-place, in-place)"
    )
    error: dict[str, float] = Field(default_factory=dict, description="--compare: predicted / measured - 1 by column")


class DeepSpeedRow(Contract):
    stage: int
    offload: str
    zero_init: bool | None = Field(description="ZeRO-3 zero_init, for the stage-3 rows")
    per_cpu_bytes: int
    per_gpu_bytes: int


class MemoryReport(Contract):
    """`dpcost memory --format json`."""

    schema_version: Literal[2] = SCHEMA_VERSION
    model: str
    params: int
    dp: int
    hbm_bytes: int
    recipe: str
    recompute: str
    note: str
    stages: list[StageRow]
    deepspeed: list[DeepSpeedRow]
