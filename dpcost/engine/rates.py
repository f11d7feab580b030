"""Sustained rates per GPU generation: what the per-op compute model (ops.py) divides FLOPs and bytes by.

Each number is a public kernel benchmark, not a training run (tests/reference/compute-rates/, sources in its
README). A topology's `gpu.rates` overrides any of them for its GPU (hgx-h200.yaml does for HBM).
- gemm, gemm_fp8: the largest share of the dense peak a matmul reaches, over shapes (Stas Bekman's
  ml-engineering "maximum achievable matmul FLOPS" tables, gemm.csv): A100 271.2 / 312, H100 794.5 / 989 BF16 and
  1402.6 / 1979 FP8, B200 1745 / 2250 BF16 and 3432.5 / 4500 FP8.
- attention, attention_seq: a causal flash attention's forward + backward rate as a share of the dense BF16 peak,
  saturating with the sequence length T as attention x T / (T + attention_seq) (attention.csv, head dim 128):
  FlashAttention-2 189 TFLOP/s at 16k on A100 (99 at 512); on H100 FlashAttention-2 (PyTorch SDPA's kernel)
  328 at 16k (163 at 512) and cuDNN (Transformer Engine's) 539 forward / 516 backward (315 forward at 512).
  B200: 834 TFLOP/s measured inside a Llama-8B training step at 8k, the only public per-shape figure.
- hbm: the share of the HBM bandwidth a streaming kernel reaches (hbm.csv): A100 1759 / 2039 GB/s (triad),
  H100 PCIe 1832 / 2000, H200 3534 / 4800; no public B200 measurement: H200's share (HBM3e) assumed.
- launch: seconds per kernel when kernels are shorter than their launch: back-to-back tiny kernels run at one per
  2.6 us (A100) and 2.4 us (H200) with eager launches (launch.csv).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dpcost.specs import GPUSpec

__all__ = ["ComputeRates", "matmul_efficiency", "rates_for"]


@dataclass(frozen=True)
class ComputeRates:
    gemm: float  # share of the dense BF16 peak a large matmul sustains
    gemm_fp8: float | None  # share of the dense FP8 peak
    # by kernel (frameworks.py attention_kernel): PyTorch SDPA's FlashAttention-2, or cuDNN's through Transformer
    # Engine; forward + backward share of the BF16 peak at long sequences
    attention: dict[str, float]
    attention_seq: float  # the sequence length at which attention runs at half that rate
    hbm: float  # share of the HBM bandwidth a streaming kernel reaches
    launch: float  # seconds: the shortest time a kernel takes when launched eagerly, one after another


ARCH_RATES: dict[str, ComputeRates] = {
    "ampere": ComputeRates(271.2 / 312, None, {"flash2": 0.625, "cudnn": 0.625}, 500.0, 1759 / 2039, 2.6e-6),
    "hopper": ComputeRates(794.5 / 989, 1402.6 / 1979, {"flash2": 0.343, "cudnn": 0.55}, 500.0, 1832 / 2000, 2.5e-6),
    "blackwell": ComputeRates(1745 / 2250, 3432.5 / 4500, {"flash2": 0.39, "cudnn": 0.39}, 500.0, 3534 / 4800, 2.5e-6),
}


def rates_for(gpu: GPUSpec) -> ComputeRates:
    """The GPU generation's rates, with the topology's own `gpu.rates` over them."""
    base = ARCH_RATES[gpu.arch]
    given = gpu.rates
    if given is None:
        return base
    attention = dict(base.attention)
    attention.update({k: v for k, v in (("flash2", given.attention_flash2), ("cudnn", given.attention_cudnn)) if v})
    return replace(
        base,
        gemm=given.gemm or base.gemm,
        gemm_fp8=given.gemm_fp8 or base.gemm_fp8,
        attention=attention,
        hbm=given.hbm or base.hbm,
        launch=given.launch if given.launch is not None else base.launch,
    )


def matmul_efficiency(gpu: GPUSpec, compute_dtype: str, given: float | None) -> float:
    """The share of the compute dtype's dense peak the matmuls sustain: --mfu where given, else the GPU's own."""
    if given is not None:
        return given
    r = rates_for(gpu)
    return (r.gemm_fp8 or r.gemm) if compute_dtype == "fp8" else r.gemm
