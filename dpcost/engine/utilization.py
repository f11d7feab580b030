"""Where one GPU's compute goes under the per-op model (ops.py), and the MFU and HFU it implies.

Every figure regroups what ops.py already priced for the plan costed (plan.Timed.compute): nothing is timed again.
- The parts are ops.PARTS: matmuls, attention, memory-bound ops (norms, activations, rotary, residual adds, the
  embedding and the loss) and the optimizer step, which is bound by memory bandwidth and runs once per step.
- Per layer: one micro-batch through the mean of the model's layers (MoE and dense layers averaged), forward,
  backward and the recomputation its checkpointing policy adds. Per step: every micro-batch, the embedding, the
  head and the loss included, and the optimizer step once.
- FLOPs executed count what the kernels run (flash attention's causal half, its backward's recomputed scores).
- Model FLOPs are PaLM's 6N + 12LHQT per token (Chowdhery et al. 2022, appendix B; compute.py); hardware FLOPs add
  the recomputation's. MFU = model FLOPs / (step time x peak), HFU = hardware FLOPs / (step time x peak)
  (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", section 6): without
  recomputation they are equal.
- The single-GPU step: one GPU's compute with no communication and no straggler, a x (forward + backward) + the
  optimizer step, the compute that step.py schedules at --skew 0.
"""

from __future__ import annotations

from dpcost.engine.compute import FlopsPerToken, flops_per_token
from dpcost.engine.ops import PARTS, MicroBatchCompute, Passes
from dpcost.engine.params import count_params
from dpcost.options import DEFAULT_MFU
from dpcost.specs import GPUSpec, ModelSpec

__all__ = [
    "hardware_flops_per_step",
    "hardware_flops_utilization",
    "mean_layer_seconds",
    "model_flops_per_step",
    "model_flops_utilization",
    "naive_tokens_per_second",
    "single_gpu_step_seconds",
    "step_flops_by_part",
    "step_seconds_by_part",
]


def naive_tokens_per_second(model: ModelSpec, gpu: GPUSpec, seq_len: int, dtype: str = "bf16") -> float:
    """The naive figure the accuracy tables set beside dpcost's, per GPU: every model FLOP (PaLM's 6N + 12LHQT) at
    DEFAULT_MFU of the dense peak, nothing else."""
    flops = flops_per_token(count_params(model), model.architecture, seq_len)
    return DEFAULT_MFU * gpu.peak(dtype) / flops.model


def model_flops_per_step(flops: FlopsPerToken, micro_batch: int, seq_len: int, accumulation: int) -> float:
    """One GPU's model FLOPs per step: 6N + 12LHQT per token (PaLM, appendix B) over its tokens."""
    return flops.model * micro_batch * seq_len * accumulation


def hardware_flops_per_step(flops: FlopsPerToken, micro_batch: int, seq_len: int, accumulation: int) -> float:
    """One GPU's hardware FLOPs per step: model FLOPs plus the recomputation's (Korthikanti et al. 2022, section 6)."""
    return flops.executed * micro_batch * seq_len * accumulation


def model_flops_utilization(model_flops: float, seconds: float, peak: float) -> float:
    """MFU: model FLOPs per second over the dense peak (PaLM, appendix B; Korthikanti et al. 2022, section 6)."""
    return model_flops / (seconds * peak)


def hardware_flops_utilization(hardware_flops: float, seconds: float, peak: float) -> float:
    """HFU: FLOPs executed, recomputation included, per second over the dense peak (Korthikanti et al. 2022, s. 6)."""
    return hardware_flops / (seconds * peak)


def step_seconds_by_part(c: MicroBatchCompute, accumulation: int, optimizer: float) -> dict[str, float]:
    """Each part's seconds in one GPU's step: every micro-batch's forward, backward and recomputation (ops.py), and
    the optimizer step once (plan.optimizer_seconds)."""
    by_part = {part: accumulation * c.seconds.total(part) for part in PARTS[:3]}
    return {**by_part, "optimizer": optimizer}


def step_flops_by_part(c: MicroBatchCompute, accumulation: int, optimizer: float = 0.0) -> dict[str, float]:
    """FLOPs each part executes in one GPU's step, recomputation included, as ops.py counts them for the kernels;
    the optimizer's element-wise work is counted in bytes, not FLOPs: its `optimizer` FLOPs are Muon's matmuls
    (plan.orthogonalized_flops), else 0."""
    by_part = {part: accumulation * c.flops.total(part) for part in PARTS[:3]}
    return {**by_part, "optimizer": optimizer}


def mean_layer_seconds(c: MicroBatchCompute, layers: int) -> Passes:
    """One micro-batch through the mean layer, by part: the layers' forward, backward and recomputation (ops.py)
    over their number."""
    s = c.layer_seconds

    def mean(values: dict[str, float]) -> dict[str, float]:
        return {part: value / layers for part, value in values.items()}

    return Passes(mean(s.forward), mean(s.backward), mean(s.recompute))


def single_gpu_step_seconds(c: MicroBatchCompute, accumulation: int, optimizer: float) -> float:
    """One GPU's step with no communication and no straggler: a x (forward + backward) + the optimizer step (ops.py;
    step.py's compute at --skew 0)."""
    return accumulation * (c.forward + c.backward) + optimizer
