"""Matmul efficiency by shape (issue 18): OpenXLA's sweeps of M, N and K from (4096, 4096, 4096), as kept in
tests/reference/compute-rates/gemm.csv, become a factor on the large-matmul share (engine/rates.py)."""

from __future__ import annotations

import csv

import pytest
from conftest import REFERENCE, read_reference_csv

from dpcost.catalog import load_model, load_topology
from dpcost.engine.ops import layer_ops, tensor_parallel
from dpcost.engine.rates import ARCH_RATES, GEMM_SWEEPS, LARGE, rates_for, shape_factor
from dpcost.specs import ComputeRatesSpec

KEYS = {"H100-SXM-80GB (XLA key sm_90)": "hopper", "B200-class (XLA key sm_100)": "blackwell"}
TILELANG = "H800-SXM (H100 compute)"  # gemm.csv's TileLang FP8 K sweep at M = N = 8192


def _table() -> dict[tuple[str, str, int, int, int], float]:
    lines = [ln for ln in (REFERENCE / "compute-rates" / "gemm.csv").read_text().splitlines() if not ln.startswith("#")]
    out: dict[tuple[str, str, int, int, int], list[float]] = {}
    for row in csv.DictReader(lines):
        if row["gpu"] in KEYS:
            dtype = "fp8" if row["dtype"].startswith("fp8") else row["dtype"]
            key = (KEYS[row["gpu"]], dtype, int(row["m"]), int(row["n"]), int(row["k"]))
            out.setdefault(key, []).append(float(row["tflops"]))
    return {k: sum(v) / len(v) for k, v in out.items()}


def test_the_sweeps_are_the_reference_tables_rows() -> None:
    """Every number in GEMM_SWEEPS is a row of gemm.csv (the reference at 4096^3 is the mean of its rows)."""
    table = _table()
    for (arch, dtype), (reference, axes) in GEMM_SWEEPS.items():
        if (arch, dtype) == ("hopper", "fp8"):
            continue  # TileLang's sweep, not XLA's: test_hopper_fp8_loses_more_along_k_than_bf16
        assert reference == pytest.approx(table[(arch, dtype, LARGE, LARGE, LARGE)])
        for axis, points in axes.items():
            for size, tflops in points:
                shape = {"m": (size, LARGE, LARGE), "n": (LARGE, size, LARGE), "k": (LARGE, LARGE, size)}[axis]
                assert tflops == table[(arch, dtype, *shape)], (arch, dtype, axis, size)


def _rows() -> list[dict[str, str]]:
    lines = [ln for ln in (REFERENCE / "compute-rates" / "gemm.csv").read_text().splitlines() if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def test_large_matmuls_run_at_the_sustained_rate_not_the_burst() -> None:
    """A training step holds the GPU at its power limit: each generation's matmul share is the power-saturated rate
    gemm.csv keeps (ml-engineering's MSMF for H200 and B200, Horace He's randn 8192^3 for A100), 15-20% under the
    boost-clock burst (MAMF) on the same GPU, as that source says."""
    rows = _rows()

    def share(gpu: str, dtype: str, kind: str) -> float:
        found = [r for r in rows if r["gpu"] == gpu and r["dtype"] == dtype and r["notes"].startswith(kind)]
        assert len(found) == 1, (gpu, dtype, kind)
        return float(found[0]["tflops"]) / float(found[0]["peak_tflops"])

    assert ARCH_RATES["hopper"].gemm == pytest.approx(share("H200-SXM", "bf16", "MSMF"))
    assert ARCH_RATES["hopper"].gemm_fp8 == pytest.approx(share("H200-SXM", "fp8_e4m3", "MSMF"))
    assert ARCH_RATES["blackwell"].gemm == pytest.approx(share("B200-SXM", "bf16", "MSMF"))
    assert ARCH_RATES["blackwell"].gemm_fp8 == pytest.approx(share("B200-SXM", "fp8_e4m3", "MSMF"))
    assert ARCH_RATES["ampere"].gemm == pytest.approx(share("A100-SXM (400 W)", "16-bit", "randn"))
    burst = {"H200-SXM": 841.9 / 989, "B200-SXM": 1770.9 / 2250}  # the MSMF rows' notes: the same table's MAMF
    for gpu, arch in (("H200-SXM", "hopper"), ("B200-SXM", "blackwell")):
        assert 0.80 <= ARCH_RATES[arch].gemm / burst[gpu] <= 0.85
    assert ARCH_RATES["ampere"].gemm < share("A100-SXM", "bf16", "MAMF")


def test_a_sweep_point_keeps_its_measured_share_and_large_matmuls_keep_all() -> None:
    """On H100, (4096, 4096, 512) ran 551.8 TFLOP/s against 781.75 at 4096^3: the factor is their ratio; from 4096
    up, 1; between points, linear in log2 (K = 1536 between 1024's 685.2 and 2048's 735.6); no sweep, 1."""
    assert shape_factor("hopper", "bf16", 4096, 4096, 512) == pytest.approx(551.8 / 781.75)
    assert shape_factor("hopper", "bf16", 16384, 14336, 8192) == 1.0
    between = (685.2 + (735.6 - 685.2) * 0.5849625007211562) / 781.75  # log2(1536) - 10
    assert shape_factor("hopper", "bf16", 4096, 4096, 1536) == pytest.approx(between)
    assert shape_factor("blackwell", "fp8", 4096, 1024, 4096) == pytest.approx(1951.8 / 2765.0)


def _a100_rows(sweep: str) -> list[tuple[int, int, int, float]]:
    """gemm-a100-shapes.csv's rows of one of its sweeps, as (m, n, k, TFLOP/s)."""
    return [
        (int(r["m"]), int(r["n"]), int(r["k"]), float(r["tflops"]))
        for r in read_reference_csv("compute-rates/gemm-a100-shapes.csv")
        if sweep in r["source"]
    ]


def test_a100_takes_hoppers_shape_losses_which_its_own_sweeps_bear_out() -> None:
    """XLA's table has no A100 key, so A100 borrows Hopper's sweep. EleutherAI's A100 sweeps (gemm-a100-shapes.csv):
    a transformer's (8192, 8192, 1024) GEMM ran 216.7 TFLOP/s, 0.876 of the median of its GEMMs with no dimension
    under 4096; and at (2304, N, 4096), N from 1536 to 6144 in steps of 128, the A100 kept 0.90 of that on average,
    no more than Hopper's sweep allows (0.94-0.97): the borrowed losses are not overstated."""
    transformer = _a100_rows("h_sweep.out")
    large = sorted(t for _, n, k, t in transformer if min(n, k) >= LARGE)
    reference = (large[len(large) // 2] + large[(len(large) - 1) // 2]) / 2
    measured = next(t for m, n, k, t in transformer if (m, n, k) == (8192, 8192, 1024))
    assert measured / reference == pytest.approx(0.876, abs=0.002)
    assert shape_factor("ampere", "bf16", 8192, 8192, 1024) == pytest.approx(measured / reference, rel=0.01)
    wide = [(m, n, k, t) for m, n, k, t in _a100_rows("ksweep_high") if n % 128 == 0]
    assert len(wide) == 37
    kept = sum(t / reference for *_, t in wide) / len(wide)
    borrowed = sum(shape_factor("ampere", "bf16", m, n, k) for m, n, k, _ in wide) / len(wide)
    assert kept == pytest.approx(0.90, abs=0.01) and kept < borrowed < 0.97


def test_tp_splits_the_matmul_along_the_axis_megatron_splits() -> None:
    """Column-parallel (QKV, MLP up) split N, row-parallel (attention output, MLP down) split K; the router is not
    split (Megatron replicates it)."""
    a = load_model("mixtral-8x7b").architecture
    assert a is not None
    ops = {o.name: o for o in tensor_parallel(layer_ops(a, True, 4096, 4096, "fused"), 4, True)}
    whole = {o.name: o for o in layer_ops(a, True, 4096, 4096, "fused")}
    assert ops["query, key, value"].shape == (4096, 4096, whole["query, key, value"].shape[2] / 4)
    assert ops["output projection"].shape == (4096, 4096 / 4, 4096)
    assert ops["expert down"].shape[1] == whole["expert down"].shape[1] / 4
    assert ops["router"] == whole["router"]


def test_hopper_fp8_loses_more_along_k_than_bf16_as_two_kernels_measure() -> None:
    """XLA's table has no Hopper FP8. TileLang's FP8 kernel on H800 (H100's die) along K at M = N = 8192 gives the K
    losses (gemm.csv), and DeepGEMM's block-scaled FP8 GEMMs on H800 at M = 4096 bear them out within 0.04 (K of 512,
    1536 and 2048 against its (4096, 4096, 7168)); M and N borrow Hopper BF16's. At K = 512 FP8 keeps 0.58 of its
    large-matmul rate where BF16 keeps 0.71: each K step does twice the math at FP8's rate, so the loop's fixed
    start and end weigh twice as much."""
    rows = _rows()
    tilelang = {int(r["k"]): float(r["tflops"]) for r in rows if r["gpu"] == TILELANG}
    for k in (256, 512, 1024, 2048):
        assert shape_factor("hopper", "fp8", 8192, 8192, k) == pytest.approx(tilelang[k] / tilelang[4096])
    deepgemm = {(int(r["m"]), int(r["n"]), int(r["k"])): float(r["tflops"])
                for r in rows if r["library"].startswith("DeepGEMM")}  # fmt: skip
    reference = deepgemm[(4096, 4096, 7168)]
    for shape in ((4096, 32768, 512), (4096, 24576, 1536), (4096, 7168, 2048)):
        assert shape_factor("hopper", "fp8", *shape) == pytest.approx(deepgemm[shape] / reference, abs=0.04), shape
    assert shape_factor("hopper", "fp8", 4096, 4096, 512) < shape_factor("hopper", "bf16", 4096, 4096, 512) - 0.1
    assert shape_factor("hopper", "fp8", 256, 4096, 4096) == shape_factor("hopper", "bf16", 256, 4096, 4096)


def test_nvfp4_keeps_about_fp8s_sustained_share_as_the_burst_benchmark_says() -> None:
    """No sustained NVFP4 matmul rate is published, so an NVFP4 matmul keeps FP8's sustained share (engine/rates.py).
    pytorch/ao#2427 ran BF16 and NVFP4 matmuls in one burst benchmark on a B200: NVFP4 kept 0.95 of BF16's share of
    peak at 6144^3 and 8192^3 (0.948, 0.945). BF16's sustained share times that is within 2% of the FP8 share taken."""
    rows = [r for r in _rows() if r["source"].startswith("pytorch/ao pull request #2427")]

    def share(dtype: str, size: int) -> float:
        (row,) = [r for r in rows if r["dtype"] == dtype and int(r["m"]) == size]
        return float(row["tflops"]) / float(row["peak_tflops"])

    ratios = [share("nvfp4", size) / share("bf16", size) for size in (6144, 8192)]
    assert ratios == pytest.approx([0.948, 0.945], abs=0.001)
    blackwell = ARCH_RATES["blackwell"]
    assert blackwell.gemm_fp4 is None  # FP8's share stands in
    assert blackwell.gemm * ratios[1] == pytest.approx(blackwell.gemm_fp8, rel=0.02)


def test_gb200_keeps_blackwells_sustained_bf16_share_scaled_by_its_burst_share_over_b200s() -> None:
    """ml-engineering's MAMF table (one table, gemm.csv @744d01e) reads a GB200 at a smaller share of its peak than a
    B200; gb200-nvl72 takes Blackwell's sustained BF16 share (B200's MSMF) times that ratio."""
    from dpcost.catalog import load_topology

    rows = [r for r in _rows() if "744d01e18b79512572f64a6bbd8b5f4a725203a7" in r["source"]]

    def burst(gpu: str, dtype: str) -> float:
        (row,) = [r for r in rows if r["gpu"] == gpu and r["dtype"] == dtype]
        return float(row["tflops"]) / float(row["peak_tflops"])

    rates = load_topology("gb200-nvl72").gpu.rates
    assert rates is not None
    blackwell = ARCH_RATES["blackwell"]
    assert rates.gemm == pytest.approx(blackwell.gemm * burst("GB200", "bf16") / burst("B200-SXM", "bf16"), abs=1e-4)


def test_gb200s_fp8_share_is_azures_sustained_run_which_reads_hopper_at_its_msmf() -> None:
    """Azure's sustained cuBLASLt runs (10,000 warm-up iterations, 8192^3 FP8; gemm.csv) read H100 and H200 within 1%
    of the power-saturated MSMF dpcost takes for every Hopper, and a GB200 at 2876.6 of 5000: gb200-nvl72's FP8
    share."""
    from dpcost.catalog import load_topology

    azure = {r["gpu"]: r for r in _rows() if r["source"].startswith("Azure/AI-benchmarking-guide")}
    assert sorted(azure) == ["GB200", "H100-SXM", "H200-SXM"]
    hopper_msmf = 1288.7 / 1979
    for gpu in ("H100-SXM", "H200-SXM"):
        assert float(azure[gpu]["tflops"]) / float(azure[gpu]["peak_tflops"]) == pytest.approx(hopper_msmf, rel=0.01)
    rates = load_topology("gb200-nvl72").gpu.rates
    assert rates is not None
    assert rates.gemm_fp8 == pytest.approx(
        float(azure["GB200"]["tflops"]) / float(azure["GB200"]["peak_tflops"]), abs=1e-4
    )


def test_a_step_keeps_the_fitted_share_of_the_benchmark_rates_unless_the_topology_says() -> None:
    """Op by op, an H100's matmuls run at ml-engineering's MSMF share (708.5 of 989 BF16, 1288.7 of 1979 FP8) x 0.91,
    the in-step share fitted on the published layouts (engine/rates.py IN_STEP_MATMUL); a topology's
    `gpu.rates.matmul_in_step` replaces the 0.91, and 1 takes the benchmark's rates as they are."""
    h100 = load_topology("dgx-h100").gpu
    assert rates_for(h100).gemm == pytest.approx(708.5 / 989 * 0.91)
    assert rates_for(h100).gemm_fp8 == pytest.approx(1288.7 / 1979 * 0.91)
    whole = h100.model_copy(update={"rates": ComputeRatesSpec(matmul_in_step=1.0)})
    assert rates_for(whole).gemm == pytest.approx(708.5 / 989)
    assert rates_for(whole).gemm_fp8 == pytest.approx(1288.7 / 1979)
    assert rates_for(whole).attention == rates_for(h100).attention  # only the matmuls
    own = h100.model_copy(update={"rates": ComputeRatesSpec(gemm=0.7, matmul_in_step=0.8)})
    assert rates_for(own).gemm == pytest.approx(0.7 * 0.8)
