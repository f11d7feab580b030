"""The slowest GPU's sustained rate (engine/rates.py slowest_gpu_loss): read from ml-engineering's runs of its
MSMF protocol on one GPU alone and on all 8 of a node at once (tests/reference/compute-rates/msmf-concurrent.csv),
and priced as a term of the step."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from conftest import read_reference_csv, step_plan

from dpcost.catalog import load_model, load_topology
from dpcost.engine.estimate import estimate
from dpcost.engine.rates import ARCH_RATES, rates_for, slowest_gpu_loss
from dpcost.engine.step import SLOWEST_GPU, Call, expected_max_deviate, step_time
from dpcost.options import Options


def _runs(gpu: str) -> dict[str, dict[str, str]]:
    return {r["setup"]: r for r in read_reference_csv("compute-rates/msmf-concurrent.csv") if r["gpu"] == gpu}


@pytest.mark.parametrize(("arch", "gpu"), [("hopper", "H200-SXM"), ("blackwell", "B200-SXM")])
def test_the_spread_is_the_benchmarks(arch: str, gpu: str) -> None:
    """node_drop: the all-8 mean's fall from the lone GPU's; gpu_spread: the 40 concurrent runs' standard deviation
    less the lone GPU's run-to-run one, a range of n normal runs spanning about 2 x Blom's largest of n deviates."""
    runs = _runs(gpu)
    alone, busy = runs["GPU0 alone"], runs["all 8 GPUs x 5 rounds"]
    rates = ARCH_RATES[arch]
    assert rates.node_drop == pytest.approx(1 - float(busy["msmf_mean"]) / float(alone["msmf_mean"]), abs=1e-4)
    between = float(busy["msmf_range_pct"]) / 100 / (2 * expected_max_deviate(int(busy["runs"])))
    within = float(alone["msmf_range_pct"]) / 100 / (2 * expected_max_deviate(int(alone["runs"])))
    assert rates.gpu_spread == pytest.approx(math.sqrt(between**2 - within**2), abs=1e-4)
    assert ARCH_RATES["ampere"].node_drop == ARCH_RATES["ampere"].gpu_spread == 0  # no A100 measurement


def test_the_slowest_of_n_loses_the_mean_fall_and_its_deviates() -> None:
    """One GPU was measured alone: it loses nothing. Of N, about node_drop + gpu_spread x E[max of N]: with Harter's
    exact E[max of 8] = 1.4236 and E[max of 1000] = 3.2414, 1.8% and 3.4% on Hopper, 5.4% and 9.7% on B200
    (log-normal rates, so the product form reads a little under the sum)."""
    hopper, blackwell = ARCH_RATES["hopper"], ARCH_RATES["blackwell"]
    assert slowest_gpu_loss(hopper, 1) == 0
    for rates, n, exact in (
        (hopper, 8, 1.4236),
        (hopper, 1000, 3.2414),
        (blackwell, 8, 1.4236),
        (blackwell, 1000, 3.2414),
    ):
        summed = rates.node_drop + rates.gpu_spread * exact
        assert slowest_gpu_loss(rates, n) == pytest.approx(summed, rel=0.05), (rates, n)
    assert slowest_gpu_loss(replace(hopper, node_drop=0.5, gpu_spread=0.9), 10**6) < 1  # never the whole rate


def test_gb200_and_gb300_trays_set_none_and_b200_boards_keep_blackwells() -> None:
    for name in ("gb200-nvl72", "gb300-nvl72"):
        rates = rates_for(load_topology(name).gpu)
        assert rates.node_drop == rates.gpu_spread == 0, name
    assert rates_for(load_topology("dgx-b200").gpu).gpu_spread == ARCH_RATES["blackwell"].gpu_spread


def test_a_compute_bound_step_waits_for_all_of_the_slowest_gpus_longer_compute() -> None:
    """Every gather hides behind its unit's compute: the step grows by the compute x loss / (1 - loss)."""
    call = lambda op, size: Call(size / 400e9, "ring/simple")  # noqa: E731
    base, slowest = step_time(step_plan(), call), step_time(step_plan(slowest_gpu=0.05), call)
    assert slowest.step - base.step == pytest.approx(3.0 * 0.05 / 0.95)
    assert dict((t.term, t.seconds) for t in slowest.breakdown)[SLOWEST_GPU] == pytest.approx(3.0 * 0.05 / 0.95)


def test_a_communication_bound_phase_hides_the_slowest_gpus_longer_compute() -> None:
    """Where the gathers take longer than the compute they overlap, the longer compute still fits under them."""
    call = lambda op, size: Call(size / 4e9, "ring/simple")  # noqa: E731  (every gather 0.5 s, each unit 0.1-0.2 s)
    base, slowest = step_time(step_plan(), call), step_time(step_plan(slowest_gpu=0.05), call)
    overlapped = sum(ph.compute * ph.repeats for ph in base.phases if ph.overlapped and ph.comm)
    assert slowest.step - base.step < 0.05 / 0.95 * (3.0 - overlapped) + 1e-12


def test_estimate_prices_it_op_by_op_and_not_under_mfu() -> None:
    """Llama 3 70B at DP 512 on H100s: the term is there op by op, and --mfu (a rate the user chose) leaves it out."""
    model, topology = load_model("llama-70b"), load_topology("dgx-h100")
    t = estimate(model, topology, Options(dp=512)).time
    assert t is not None
    term = dict((b.term, b.seconds) for b in t.breakdown)[SLOWEST_GPU]
    loss = slowest_gpu_loss(ARCH_RATES["hopper"], 512)
    assert 0 < term <= t.compute_seconds * loss / (1 - loss) + 1e-9
    chosen = estimate(model, topology, Options(dp=512, mfu=0.4, compute_model="ops")).time
    assert chosen is not None and dict((b.term, b.seconds) for b in chosen.breakdown)[SLOWEST_GPU] == 0
