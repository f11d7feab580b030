"""Sustained rates per GPU generation: what the per-op compute model (ops.py) divides FLOPs and bytes by.

Each number is a public kernel benchmark, not a training run (tests/reference/compute-rates/, sources in its
README). A topology's `gpu.rates` overrides any of them for its GPU.
- gemm, gemm_fp8: the share of the dense peak a large matmul sustains once the GPU draws its full power, as a
  training step keeps it (gemm.csv). A short benchmark burst runs at the boost clock; a power-saturated GPU's
  clock settles lower (H200 at 700 W: 1980 -> 1465 MHz; B200 at 1000 W: 1965 -> 1339 MHz) and its best matmul runs
  16-18% slower. Stas Bekman's ml-engineering
  "maximum sustainable matmul FLOPS" (MSMF): H200 708.5 / 989 BF16 and 1288.7 / 1979 FP8 (its burst MAMF: 841.9,
  1491.9), taken for every Hopper (H100, H800: the same GH100 die, 132 SMs, 700 W; no H100 MSMF is published);
  B200 1456.3 / 2250 BF16 and 2795.7 / 4500 FP8 (burst 1770.9, 3435.2). A100: no MSMF; an 8192^3 16-bit matmul on
  normally distributed data at the 400 W limit, 257 / 312 (Horace He, "Matrix multiplications on GPUs run faster
  when given predictable data", 2024; the burst MAMF is 271.2).
- attention, attention_seq: a causal flash attention's forward + backward rate as a share of the dense BF16 peak,
  saturating with the sequence length T as attention x T / (T + attention_seq) (attention.csv, head dim 128):
  FlashAttention-2 189 TFLOP/s at 16k on A100 (99 at 512); on H100 FlashAttention-2 (PyTorch SDPA's kernel)
  328 at 16k (163 at 512) and cuDNN (Transformer Engine's) 539 forward / 516 backward (315 forward at 512).
  B200: 834 TFLOP/s measured inside a Llama-8B training step at 8k, the only public per-shape figure. The A100 and
  H100 figures are benchmark bursts at the boost clock; a step runs them at the power-saturated clock, so they keep
  the share of their burst rate a saturated matmul keeps (SATURATED: MSMF / MAMF on H200, 708.5 / 841.9; on A100
  the randn 8192^3 rate over the MAMF, 257 / 271.2). On H200 that puts cuDNN's attention at 432 TFLOP/s at 8k,
  beside the 447 FlashAttention-3 measured inside a Llama-8B step there (attention.csv); 513 without it.
- attention by head dim (ATTENTION_HEAD_DIM): the rates above are head dim 128's. A kernel's softmax work per score
  is fixed while its two matmuls per score shrink with the head dim, so at 64 the exponentials, which run on the
  far slower multi-function units (the FlashAttention-3 paper, section 3), weigh more. attention.csv's H100
  sweeps, causal, over sequences of 512 to 16k, as a share of head dim 128's rate: FlashAttention-2 forward +
  backward 0.873 at 64 (A100's: 0.90), forward 0.948 at 256; cuDNN forward 0.707 at 64 and 0.946 at 256 (no cuDNN
  backward is swept by head dim; its forward's ratio is taken for both). Between them, linear in log2 of the head
  dim, which is (d_qk + d_v) / 2 where they differ (MLA's 192 and 128); outside them, the nearest. Taken for every
  generation: no other one is swept.
- a sliding window's band (attention_query_tile): a flash kernel computes a block of query rows against every key
  any of them sees, so a window of W keys costs each query W plus the block's rows, masked after (FlashAttention-2
  and -3 take 128 query rows a block on Ampere and Hopper, hopper/tile_size.h; FlashAttention-4 on Blackwell two
  stages of 128, 256, flash_fwd_sm100.py's cta_tiler). cuDNN's training benchmark (attention-cudnn-sdpa.csv,
  cuDNN 9.19 and 9.22) bears it out: against a full causal layer on the same GPU, dpcost's time over the measured
  is 1.35 against 1.31 for a window of 1,024 on H200 (1.22 without the block) and 1.30 against 1.52 for a window
  of 128 on GB200 (0.78 without), at 8,192 tokens.
- hbm: the share of the HBM bandwidth a streaming kernel reaches (hbm.csv): A100 1759 / 2039 GB/s (triad),
  H100 PCIe 1832 / 2000, H200 3534 / 4800; no public B200 measurement: H200's share (HBM3e) assumed.
- eager attention (EAGER_SCORES_HBM): without flash attention the scores go through HBM, two batched matmuls over
  the s x s square (reducing over the head dim, or producing it) and a softmax between; priced by their bytes, they
  stream at 0.54 of the rate above. PyTorch's standard attention in FlashAttention-2's A100 benchmark (attention.csv:
  head dim 128, causal, fwd+bwd) runs 32, 32 and 34 TFLOP/s at 2k, 4k and 8k as FlashAttention counts them
  (3.5 x the causal half's 4bs^2hd/2); its kernels move 26 bytes per score (forward: the scores written, the mask
  added, the softmax, the scores read again; backward: 14), which at A100's streaming rate would take 0.53, 0.53
  and 0.56 of the measured time. Their mean, taken for every GPU (no other generation's standard attention was
  found).
- gemm_fp4 (NVFP4, Blackwell): no sustained FP4 matmul rate was found published (no MSMF, no power-saturated
  figure), so an NVFP4 matmul keeps the FP8 share of its own dense peak (Blackwell's 2795.7 / 4500), and FP8's
  shape losses (SHAPE_SWEEP_OF); a topology's `gpu.rates.gemm_fp4` overrides it. A burst benchmark bears the share
  out: on a B200, cuBLAS's NVFP4 matmul kept 0.945-0.948 of BF16's share of peak in the same run at 6144^3 and
  8192^3 (pytorch/ao#2427, gemm.csv), and BF16's sustained 0.647 x 0.945 = 0.612 is FP8's 0.621 within 2%.
- Mamba-2's chunked scan (SSD_FLOPS_PER_HBM_BYTE): mamba_ssm's Triton kernels (mamba_chunk_scan_combined) run far
  from both the tensor cores' peak and the bandwidth their tensors' bytes need, at a rate that follows the HBM
  bandwidth from one generation to the next: at 65,536 tokens and more, 11.7-15.9 FLOPs (compute.mixer_recurrence_flops'
  count) per byte/s of peak HBM bandwidth on H200 (tile-ai/TileOPs#1557, 10 shapes, 56-76 TFLOP/s) and 11.3-11.5
  on B200 (flashinfer-ai/flashinfer#2709, 2 shapes) (mamba2-ssd-kernels.md); their median, 12, for every GPU, and
  for the backward's FLOPs too. The H200 runs held the SM clock at 1830 MHz; a rate that tracks the memory's, not
  the tensor cores', is taken to keep at a step's lower clock. Held out (mamba2-ssd-tfla-h100.csv, the TFLA paper's
  H100 timings of the same kernels, forward and forward + backward): the sum reads -4% to -24%, the forward alone
  47-56% slow, so the rate holds for a training step's forward and backward together, not for each pass.
- node_drop, gpu_spread: a synchronous step runs at its slowest GPU's pace, and a node's GPUs, all busy, do not
  sustain one rate. ml-engineering timed its MSMF protocol on one GPU alone and on all 8 of a node at once
  (msmf-concurrent.csv): H200 alone 702.9 TFLOP/s (runs spread 1.4% over 5), all 8 698.6 (spread 4.5% over 40);
  B200 1455.7 (1.1%) and 1426.4 (10.4%). node_drop is the mean's fall, 1 - 698.6 / 702.9 = 0.0061 and
  1 - 1426.4 / 1455.7 = 0.0201; gpu_spread the standard deviation between GPUs, the 40 runs' less the lone GPU's
  run-to-run one (a range of n normal runs spans about 2 x Blom's largest of n deviates: 4.31 for 40, 2.36 for 5):
  sqrt((0.045 / 4.31)^2 - (0.014 / 2.36)^2) = 0.0086 and sqrt((0.104 / 4.31)^2 - (0.011 / 2.36)^2) = 0.0237. Hopper
  takes H200's (H100 and H800 are the same 700 W board); Blackwell B200's (an air-cooled 8-GPU board at 1000 W).
  GB200 and GB300, liquid-cooled NVL72 trays with their own power budget, were not measured: their topologies set
  0. slowest_gpu_loss prices it; a GPU's rates override either.
- in a step (IN_STEP_MATMUL): the matmul shares above are benchmarks, one shape repeated on a soaked GPU; inside a
  training step dpcost's matmuls run slower than them, by more than its other parts do. Over the published runs
  the layout benchmark holds in sample (benchmarks/large_runs.py: 73 configurations from 10 sources, A100 to
  GB300: the Megatron-LM, Llama 3, DeepSeek-V3, MegaScale, BLOOM and Nemotron-4 papers and two Megatron-Bridge
  tables), dpcost read 10% fast at the median; stretching one part alone, the matmuls' time x 1.1 took the geomean
  error from 10.0% to 5.8%, attention's x 1.3 to 8.9%, the memory-bound ops' x 1.5 to 7.8%. What slows them is not
  pinned down (not found published: a per-kernel profile of a step beside the same kernels run alone), so the
  share is fitted: the one number, for every generation and dtype, with the least in-sample geomean error
  (`large_runs.py --fit-matmul`, in steps of 0.01), 0.91. Since the MoE layers' host time was priced (host.py) the
  fit's best is 0.92 by 0.15 points (5.02% against 5.17%), where the curve is flat within 1 point from 0.89 to
  0.93, and the share was not moved. It is checked out of sample, not set there: the held-out
  published layouts and the training-scaling runs' tokens/s, reported beside it in the README. `--mfu` (or a
  calibration's) replaces the whole share; a topology's `gpu.rates.matmul_in_step` this factor (1: the benchmarks'
  rates as they are).
- launch: seconds per kernel when kernels are shorter than their launch: back-to-back tiny kernels run at one per
  2.6 us (A100) and 2.4 us (H200) with eager launches (launch.csv).
- gemm by shape: a matmul with a dimension under 4096 runs slower than a large one. OpenXLA's matmul cost table
  (gemm.csv, keys sm_90 and sm_100) sweeps M, N and K one at a time from (4096, 4096, 4096); each sweep's TFLOP/s
  over that reference is a factor, interpolated in log2 of the dimension, 1 from 4096 up, the smallest point's
  below it. A matmul runs at the large-matmul share (gemm above, or --mfu) times its three factors. Where two
  dimensions are small the product reads high (the table's 4096 x 1024 x 1024 runs 0.75 of the product), which
  training's shapes rarely are.
- Hopper FP8 has no XLA key either: TileLang's autotuned FP8 kernel on H800 (H100's die, gemm.csv) sweeps K at
  M = N = 8192, from 569 TFLOP/s at K = 256 to 1467 at 4096, and DeepGEMM's block-scaled FP8 GEMMs on H800 agree
  within 0.04 (tests/test_gemm_shapes.py). FP8 loses more along K than BF16 (0.58 of its rate at K = 512 against
  0.71): each K step does twice the math, so the loop's fixed start and end weigh twice as much. M and N take
  Hopper BF16's (SHAPE_SWEEP_OF, axis by axis), whose losses come from tiles and waves alike.
- A100 has no such sweep (XLA's table has no sm_80 key), so it borrows Hopper's (SHAPE_SWEEP_OF): the losses come
  from tiling a matmul into thread-block tiles and waves of them over the SMs and from the K loop's fixed start and
  end, which cuBLAS does alike on both. The A100's own sweeps (gemm-a100-shapes.csv, EleutherAI's cookbook) agree
  where they can be read: a transformer's (8192, 8192, 1024) ran 216.7 TFLOP/s against 247 for its large GEMMs,
  0.876, the factor Hopper's sweep gives; at (2304, 1536..6144, 4096) they ran 0.64-0.97 (0.90 on average) of it,
  where Hopper's sweep gives 0.94-0.97. Before, every A100 matmul ran at the large-matmul share.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable
from dataclasses import replace

from dpcost.engine.step import expected_max_deviate
from dpcost.frozen import frozen
from dpcost.specs import ComputeRatesSpec, GPUSpec

__all__ = [
    "ATTENTION_HEAD_DIM",
    "EAGER_SCORES_HBM",
    "GEMM_SWEEPS",
    "IN_STEP_MATMUL",
    "LARGE",
    "SATURATED",
    "SHAPE_SWEEP_OF",
    "SSD_FLOPS_PER_HBM_BYTE",
    "ComputeRates",
    "attention_head_factor",
    "matmul_efficiency",
    "matmul_in_step",
    "rates_for",
    "shape_factor",
    "slowest_gpu_loss",
]


@frozen
class ComputeRates:
    gemm: float  # share of the BF16 peak a large matmul sustains (ARCH_RATES: its benchmark; rates_for: in a step)
    gemm_fp8: float | None  # share of the dense FP8 peak
    # by kernel (frameworks.py attention_kernel): PyTorch SDPA's FlashAttention-2, or cuDNN's through Transformer
    # Engine; forward + backward share of the BF16 peak at long sequences
    attention: dict[str, float]
    attention_seq: float  # the sequence length at which attention runs at half that rate
    attention_query_tile: int  # query rows a flash kernel's block computes together (a window's band: module doc)
    hbm: float  # share of the HBM bandwidth a streaming kernel reaches
    launch: float  # seconds: the shortest time a kernel takes when launched eagerly, one after another
    gemm_fp4: float | None = None  # share of the dense FP4 peak; None: the FP8 share (module docstring)
    node_drop: float = 0.0  # the sustained rate's fall, on average, with every GPU of the node busy
    gpu_spread: float = 0.0  # the standard deviation of the sustained rate between busy GPUs, as a share of it


# The share of its benchmark's sustained rate a matmul keeps inside a training step: fitted, not measured (module
# docstring; benchmarks/large_runs.py --fit-matmul). A topology's `gpu.rates.matmul_in_step` overrides it.
IN_STEP_MATMUL = 0.91

# Eager attention's score kernels move their bytes at this share of the streaming rate (module docstring).
EAGER_SCORES_HBM = 0.54

# Mamba-2's chunked scan runs this many FLOPs per byte/s of the GPU's peak HBM bandwidth (module docstring).
SSD_FLOPS_PER_HBM_BYTE = 12.0

# The share of a burst's rate a tensor-core kernel keeps at the power-saturated clock of a training step (module
# docstring): Blackwell's attention figure was measured inside a step already.
SATURATED = {"ampere": 257 / 271.2, "hopper": 708.5 / 841.9}

ARCH_RATES: dict[str, ComputeRates] = {
    "ampere": ComputeRates(
        257 / 312,
        None,
        {"flash2": 0.625 * SATURATED["ampere"], "cudnn": 0.625 * SATURATED["ampere"]},
        500.0,
        128,
        1759 / 2039,
        2.6e-6,
    ),
    "hopper": ComputeRates(
        708.5 / 989,
        1288.7 / 1979,
        {"flash2": 0.343 * SATURATED["hopper"], "cudnn": 0.55 * SATURATED["hopper"]},
        500.0,
        128,
        1832 / 2000,
        2.5e-6,
        node_drop=1 - 698.6 / 702.9,
        gpu_spread=0.0086,
    ),
    "blackwell": ComputeRates(
        1456.3 / 2250,
        2795.7 / 4500,
        {"flash2": 0.39, "cudnn": 0.39},
        500.0,
        256,
        3534 / 4800,
        2.5e-6,
        node_drop=1 - 1426.4 / 1455.7,
        gpu_spread=0.0237,
    ),
}


# The share of head dim 128's attention rate a kernel keeps at another head dim (module docstring; attention.csv,
# H100, causal, the mean over sequences of 512 to 16k): FlashAttention-2 forward + backward at 64 and forward at
# 256, cuDNN forward at both.
ATTENTION_HEAD_DIM: dict[str, tuple[tuple[int, float], ...]] = {
    "flash2": ((64, 0.873), (128, 1.0), (256, 0.948)),
    "cudnn": ((64, 0.707), (128, 1.0), (256, 0.946)),
}


def attention_head_factor(kernel: str, head_dim: float) -> float:
    """The share of head dim 128's rate `kernel` keeps at `head_dim` (ATTENTION_HEAD_DIM): linear in log2 between
    the swept head dims, the nearest one's outside them."""
    points = ATTENTION_HEAD_DIM.get(kernel)
    if points is None or head_dim <= 0:
        return 1.0
    return _in_log2(points, head_dim)


def _in_log2(points: Iterable[tuple[float, float]], at: float) -> float:
    """The curve through `points` (x, y), x ascending, at `at`: linear in log2(x) between them, the nearest end's y
    outside them."""
    curve = [(math.log2(x), y) for x, y in points]
    x = math.log2(at)
    if x <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(curve):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return curve[-1][1]


# OpenXLA matmul cost table (tests/reference/compute-rates/gemm.csv, XLA keys sm_90 and sm_100), TFLOP/s at
# (4096, 4096, 4096) and along each axis with the other two at 4096. sm_90's reference is the mean of its two rows.
GEMM_SWEEPS: dict[tuple[str, str], tuple[float, dict[str, tuple[tuple[int, float], ...]]]] = {
    ("hopper", "bf16"): (
        (780.2 + 783.3) / 2,
        {
            "m": ((256, 418.4), (2048, 752.3)),
            "n": ((512, 662.0), (1024, 751.7), (2048, 759.4)),
            "k": ((256, 398.6), (512, 551.8), (1024, 685.2), (2048, 735.6)),
        },
    ),
    ("blackwell", "bf16"): (
        1416.9,
        {
            "m": ((256, 651.4),),
            "n": ((512, 991.5), (1024, 1204.9), (2048, 1343.5)),
            "k": ((256, 514.7), (512, 805.3), (1024, 1075.6), (2048, 1277.8)),
        },
    ),
    # Hopper FP8: no XLA key; TileLang's autotuned FP8 kernel on H800 (H100's die) along K at M = N = 8192
    # (gemm.csv), its reference at K = 4096. M and N are borrowed from Hopper BF16 (SHAPE_SWEEP_OF).
    ("hopper", "fp8"): (
        1467.0,
        {"k": ((256, 569.0), (512, 858.0), (1024, 1129.0), (2048, 1343.0))},
    ),
    ("blackwell", "fp8"): (
        2765.0,
        {
            "m": ((256, 930.5),),
            "n": ((512, 1485.0), (1024, 1951.8), (2048, 2499.4)),
            "k": ((256, 666.9), (512, 1172.1), (1024, 1895.4), (2048, 2485.0)),
        },
    ),
}
LARGE = 4096  # the sweeps' reference dimension: from here up a matmul runs at the large-matmul share
# A generation without a sweep of its own, or an axis without one, takes the nearest one's shape losses (module
# docstring).
SHAPE_SWEEP_OF = {
    ("ampere", "bf16"): ("hopper", "bf16"),
    ("hopper", "fp8"): ("hopper", "bf16"),
    ("blackwell", "nvfp4"): ("blackwell", "fp8"),
}


def _axis_factor(points: tuple[tuple[int, float], ...], reference: float, size: float) -> float:
    """One axis's factor at `size`: the sweep over the reference, linear in log2(size), 1 from LARGE up."""
    return _in_log2([*((x, t / reference) for x, t in points), (LARGE, 1.0)], max(size, 1.0))


@functools.lru_cache(maxsize=4096)  # a plan search asks for the same few shapes many times
def shape_factor(arch: str, dtype: str, m: float, n: float, k: float) -> float:
    """The share of the large-matmul rate an (m x k) by (k x n) matmul keeps (module docstring): 1 without a sweep."""
    if min(m, n, k) <= 0:
        return 1.0
    factor = 1.0
    for axis, size in (("m", m), ("n", n), ("k", k)):
        key: tuple[str, str] | None = (arch, dtype)
        while key is not None and axis not in GEMM_SWEEPS.get(key, (0.0, {}))[1]:
            key = SHAPE_SWEEP_OF.get(key)
        if key is not None:
            reference, axes = GEMM_SWEEPS[key]
            factor *= _axis_factor(axes[axis], reference, size)
    return factor


def matmul_in_step(gpu: GPUSpec) -> float:
    """The share of their benchmark's rate `gpu`'s matmuls keep inside a training step: the topology's
    `gpu.rates.matmul_in_step`, else IN_STEP_MATMUL (fitted: module docstring)."""
    given = gpu.rates
    return IN_STEP_MATMUL if given is None or given.matmul_in_step is None else given.matmul_in_step


def rates_for(gpu: GPUSpec) -> ComputeRates:
    """The rates a training step's ops run at on `gpu`: its generation's, with the topology's own `gpu.rates` over
    them, the matmul shares at matmul_in_step of their benchmark's."""
    return _rates_in_step(gpu, matmul_in_step(gpu))


@functools.lru_cache(maxsize=256)
def _rates_in_step(gpu: GPUSpec, in_step: float) -> ComputeRates:
    base = ARCH_RATES[gpu.arch]
    given = gpu.rates or ComputeRatesSpec.model_construct()  # every field None: no validator to build

    def in_a_step(share: float | None) -> float | None:
        return None if share is None else share * in_step

    attention = dict(base.attention)
    attention.update({k: v for k, v in (("flash2", given.attention_flash2), ("cudnn", given.attention_cudnn)) if v})
    return replace(
        base,
        gemm=(given.gemm or base.gemm) * in_step,
        gemm_fp8=in_a_step(given.gemm_fp8 or base.gemm_fp8),
        gemm_fp4=in_a_step(given.gemm_fp4 or base.gemm_fp4),
        attention=attention,
        hbm=given.hbm or base.hbm,
        launch=given.launch if given.launch is not None else base.launch,
        node_drop=given.node_drop if given.node_drop is not None else base.node_drop,
        gpu_spread=given.gpu_spread if given.gpu_spread is not None else base.gpu_spread,
    )


def slowest_gpu_loss(rates: ComputeRates, gpus: int) -> float:
    """The share of its alone-measured sustained rate the slowest of `gpus` busy GPUs loses (module docstring):
    1 - (1 - node_drop) x exp(-gpu_spread x Blom's largest of `gpus` deviates), about node_drop + gpu_spread x that
    deviate (the rates taken as log-normal, so that none falls to zero); nothing for one GPU, measured alone."""
    if gpus <= 1:
        return 0.0
    return 1.0 - (1.0 - rates.node_drop) * math.exp(-rates.gpu_spread * expected_max_deviate(gpus))


def matmul_efficiency(gpu: GPUSpec, compute_dtype: str, given: float | None) -> float:
    """The share of the compute dtype's dense peak the matmuls sustain: --mfu where given, else the GPU's own."""
    if given is not None:
        return given
    r = rates_for(gpu)
    if compute_dtype == "nvfp4":
        return r.gemm_fp4 or r.gemm_fp8 or r.gemm
    return (r.gemm_fp8 or r.gemm) if compute_dtype == "fp8" else r.gemm
