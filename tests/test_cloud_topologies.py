"""The cloud topologies (AWS p4de/p5, Google Cloud A3 Mega/A3 Ultra/A4) hold the facts their instances' public
specs state, the CLI takes them, and the public nccl-tests runs taken on those instances are scored on them."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
from conftest import REFERENCE
from typer.testing import CliRunner

from dpcost.accuracy import guess_topology, predict
from dpcost.catalog import catalog_dir, list_topologies, load_measurements, load_topology
from dpcost.cli import app
from dpcost.nccl_tests import parse_measurements

GBPS = 1e9 / 8  # bytes/s in one Gb/s

# name: (GPU arch, HBM per GPU in bytes, GPUs per node, NICs per node, Gb/s per NIC, host CPU vendor, NVLS on the
# baseboard), as the instance's public spec states them (each YAML's header cites where).
# what CUDA reports each GPU holds (docs/sources/gpu-memory.md)
H100_HELD, H200_HELD, B200_HELD = 79.11 * 2**30, 139.81 * 2**30, 178.35 * 2**30

SPECS = {
    "aws-p4de": ("ampere", 80e9, 8, 4, 100, "intel", False),  # A100 80GB, EFA 4 x 100G, Xeon 8275CL
    "aws-p5": ("hopper", H100_HELD, 8, 32, 100, "amd", True),  # H100, EFAv2 32 x 100G, EPYC 7R13
    "gcp-a3-mega": ("hopper", H100_HELD, 8, 8, 200, "intel", True),  # H100, 8 x 200G TCPXO, Sapphire Rapids
    "gcp-a3-ultra": ("hopper", H200_HELD, 8, 8, 400, "intel", True),  # H200, 8 x 400G RoCE CX-7, Emerald Rapids
    "gcp-a4": ("blackwell", B200_HELD, 8, 8, 400, "intel", True),  # B200, 8 x 400G RoCE CX-7
}
# The sibling NVIDIA design whose NVLink (and NVLS) numbers each carries over: the same NVSwitch baseboard.
SIBLING = {
    "aws-p4de": "dgx-a100",
    "aws-p5": "dgx-h100",
    "gcp-a3-mega": "dgx-h100",
    "gcp-a3-ultra": "hgx-h200",
    "gcp-a4": "dgx-b200",
}
# The public runs on those instances, and the topology each is scored on.
RUNS = {
    "a100-2n-all_reduce-awsp4de.csv": "aws-p4de",
    "h100-2n-all_reduce-awsp5.csv": "aws-p5",
    "h100-2n-all_reduce-gcpa3mega.log": "gcp-a3-mega",
    "h200-2n-all_gather-gcpa3ultra.log": "gcp-a3-ultra",
    "b200-2n-all_gather-gcpa4-dranet.log": "gcp-a4",
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_public_spec_facts(name: str) -> None:
    arch, hbm, per_node, nics, nic_gbps, cpu, nvls = SPECS[name]
    t = load_topology(name)
    assert t.name == name and t.gpu.arch == arch and t.gpu.hbm == pytest.approx(hbm)
    assert t.domain_size == per_node  # one NVLink domain per instance
    assert t.host_cpu == cpu
    network = t.tiers[1]
    assert network.bandwidth == nics * nic_gbps * GBPS / per_node  # per GPU, bytes/s
    assert (t.tiers[0].in_network_reduction is not None) == nvls


def test_per_gpu_network_bandwidth_in_bytes() -> None:
    """50 Gb/s per GPU on p4de (two GPUs per 100G card), 400 Gb/s on p5, A3 Ultra and A4, 200 Gb/s on A3 Mega."""
    got = {name: load_topology(name).tiers[1].bandwidth for name in SPECS}
    assert got == {
        "aws-p4de": 6.25e9,
        "aws-p5": 50e9,
        "gcp-a3-mega": 25e9,
        "gcp-a3-ultra": 50e9,
        "gcp-a4": 50e9,
    }


# The network latency the NIC reports to NCCL, which NCCL adds to each network step (tuning.cc:384-391): on AWS the
# EFA plugin's per-platform figure (aws-ofi-nccl v1.16.3 src/platform-aws.cpp, platform_data_map `.latency`: 75.0
# for p4d.24xlarge, p4de.24xlarge and p5/p5e, 35.0 for the "p-series" entry matching p5en and p6); NCCL's own IB and
# socket transports report none.
REPORTED_NIC_LATENCY = {
    "aws-p4de": 75e-6,
    "aws-p5": 75e-6,
    "aws-p5en": 35e-6,
    "aws-p6-b200": 35e-6,
    "gcp-a3-mega": 0.0,
    "gcp-a3-ultra": 0.0,
    "gcp-a4": 0.0,
}


# What a network step takes beyond NCCL's own hop latency: on AWS the EFA plugin's own cost model of the platform
# (aws-ofi-nccl v1.16.3 src/tuner/nccl_ofi_model.cpp `.net_lat`: 20.0 for P5/P5e, 18.0 for P5en; none for P4 or P6,
# where p4de keeps the reported figure and p6 takes P5en's, with which it shares its reported one).
NETWORK_STEP_LATENCY = {**REPORTED_NIC_LATENCY, "aws-p5": 20e-6, "aws-p5en": 18e-6, "aws-p6-b200": 18e-6}


@pytest.mark.parametrize("name", sorted(REPORTED_NIC_LATENCY))
def test_nccl_is_told_what_the_nic_reports(name: str) -> None:
    net = load_topology(name).tiers[1]
    told = net.hop_latency if net.reported_latency is None else net.reported_latency
    assert told == pytest.approx(REPORTED_NIC_LATENCY[name], abs=1e-12)


@pytest.mark.parametrize("name", sorted(NETWORK_STEP_LATENCY))
def test_a_network_step_takes_the_plugins_modelled_latency(name: str) -> None:
    assert load_topology(name).tiers[1].hop_latency == pytest.approx(NETWORK_STEP_LATENCY[name], abs=1e-12)


def test_a_network_step_is_priced_at_the_tiers_own_latency() -> None:
    """A network step costs NCCL's hop latency plus the tier's own, twice for Simple: 2-node Tree/LL pays it once
    per direction (2 x log2(2) steps), so a 4 B all-reduce on aws-p5 costs 2 x 20 us more than with none, not the
    2 x 75 us the plugin tells NCCL."""
    from dpcost.engine.collectives import collective

    p5 = load_topology("aws-p5")
    net = p5.tiers[1]
    bare = p5.model_copy(update={"tiers": [p5.tiers[0], net.model_copy(update={"hop_latency": 0.0})]})
    with_it = collective(p5, "all_reduce", 16, 4, algorithm="tree", protocol="ll")
    without = collective(bare, "all_reduce", 16, 4, algorithm="tree", protocol="ll")
    assert with_it.best.seconds - without.best.seconds == pytest.approx(2 * 20e-6, rel=1e-9)


def test_nccl_picks_with_the_reported_latency() -> None:
    """Where NCCL's own tuner picks (up to two nodes, and all-gathers at 8 GPUs a node on P5, for which the plugin has
    no regions),
    it adds the 75 us the plugin reports to each network step, twice for Simple, so Ring/LL128 holds longer against
    Ring/Simple: on 2 x p5 a 512 MiB all-gather runs LL128, where steps of 20 us would have it run Simple. Each pick
    is priced at the tier's own latency."""
    from dpcost.engine.collectives import collective, collective_time, fastest

    p5 = load_topology("aws-p5")
    net = p5.tiers[1]
    as_told = p5.model_copy(update={"tiers": [p5.tiers[0], net.model_copy(update={"hop_latency": 75e-6})]})
    as_priced = p5.model_copy(update={"tiers": [p5.tiers[0], net.model_copy(update={"reported_latency": None})]})
    own_picks = set()
    for op in ("all_reduce", "all_gather"):
        for size in (2**k for k in range(2, 35)):
            got = fastest(p5, op, 16, size)
            told = fastest(as_told, op, 16, size)
            assert (got.algorithm, got.protocol) == (told.algorithm, told.protocol)
            assert got.seconds == fastest(as_priced, op, 16, size, got.algorithm, got.protocol).seconds
            own = fastest(as_priced, op, 16, size)
            own_picks.add((own.algorithm, own.protocol) != (got.algorithm, got.protocol))
    assert own_picks == {False, True}  # steps of 20 us alone would move some picks
    assert fastest(p5, "all_gather", 16, 2**29).protocol == "ll128"
    listed = collective(p5, "all_gather", 16, 2**29)  # the report's rows: NCCL's pick first, each at its own price
    assert listed.best == listed.candidates[0] == fastest(p5, "all_gather", 16, 2**29)
    assert collective_time(p5, "all_gather", 16, 2**29, "ring").protocol == "ll128"  # one algorithm: NCCL's protocol
    # Ring broadcast and reduce: NCCL prices their steps without the NIC's latency (tuning.cc:393-401)
    for op in ("broadcast", "reduce"):
        for size in (2**k for k in range(2, 35)):
            assert fastest(p5, op, 32, size) == fastest(as_priced, op, 32, size)
    assert fastest(as_priced, "all_gather", 16, 2**29).protocol == "simple"


@pytest.mark.parametrize(
    "path",
    [
        "nccl-tests/h100-2n-all_reduce-awsp5.csv",  # AWS's reference output (in sample)
        "nccl-tests-holdout/h100-2n-all_reduce-tfeksblueprints2024jun.log",  # EKS blueprints (held out)
        "nccl-tests-holdout/h200-2n-all_reduce-tfeksblueprints2024oct.log",
    ],
)
def test_smallest_2_node_p5_all_reduces_within_15_percent(path: str) -> None:
    """The three public 2 x p5 runs take 65-88 us for an all-reduce of 8 B to 1 KiB (medians 65-77): two Tree/LL
    network steps of NCCL's 5 us and the plugin's modelled 20, where the 75 us it reports would give about 180."""
    m = parse_measurements((REFERENCE / path).read_text(), path)
    small = [p for p in predict(m, load_topology("aws-p5")) if p.size_bytes <= 1024 and p.column == "out-of-place"]
    assert len(small) >= 8
    median = statistics.median(p.measured_us for p in small)
    assert all(p.predicted_us == pytest.approx(median, rel=0.15) for p in small)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_one_network_tier_of_open_size_with_nothing_fitted(name: str) -> None:
    """The clouds do not publish their fabrics' switch tiers: one network tier, open size, non-blocking, NCCL's
    latencies unscaled; the NVLink tier is the sibling NVIDIA design's."""
    t, sibling = load_topology(name), load_topology(SIBLING[name])
    assert len(t.tiers) == 2 and t.max_gpus is None
    assert t.tiers[1].oversubscription == 1
    assert t.latency_scale == 1 and t.scaling_loss == sibling.scaling_loss and t.calibration is None
    assert t.tiers[0] == sibling.tiers[0]
    assert t.gpu.bf16_dense == sibling.gpu.bf16_dense and t.gpu.sms == sibling.gpu.sms
    assert t.call_overhead == sibling.call_overhead


@pytest.mark.parametrize("name", sorted(SPECS))
def test_sources_are_cited(name: str) -> None:
    t = load_topology(name)
    assert t.sources and all(s.startswith("https://") for s in t.sources)
    text = (Path(str(catalog_dir("topologies"))) / f"{name}.yaml").read_text()
    assert "nothing here is fitted to a measured run" in text
    # a topology header that names a reference run counts that run as in sample (benchmarks/accuracy.py)
    assert not re.findall(r"[\w.-]+\.(?:log|csv)", text)


def test_listed_in_the_catalog() -> None:
    assert set(SPECS) <= {t.name for t in list_topologies()}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_cli_takes_it(name: str) -> None:
    args = ["collective", "--topology", name, "--op", "all_reduce", "--ranks", "16", "--sizes", "1G"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    assert name in result.stdout


@pytest.mark.parametrize(("run", "name"), sorted(RUNS.items()))
def test_the_public_runs_name_their_instance(run: str, name: str) -> None:
    """Each run's `# dpcost-topology:` line (CSV files included) points at its instance's topology and says that no
    constant was fitted to it."""
    path = REFERENCE / "nccl-tests" / run
    assert guess_topology(load_measurements(str(path))) == name
    assert f"# {name}'s numbers come from the" in path.read_text()
    assert "no constant was fitted to this run" in path.read_text()


def test_a_csv_reads_its_topology_line(tmp_path: Path) -> None:
    csv = tmp_path / "h100-run.csv"
    csv.write_text("# dpcost-topology: aws-p5\nop,ranks,size_bytes,time_us\nall_reduce,16,1048576,150\n")
    assert guess_topology(load_measurements(str(csv))) == "aws-p5"
    csv.write_text("op,ranks,size_bytes,time_us\nall_reduce,16,1048576,150\n")
    assert guess_topology(load_measurements(str(csv))) == "dgx-h100"  # no line: the GPU in the file name
