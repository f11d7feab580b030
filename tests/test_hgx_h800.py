"""hgx-h800 holds the facts DeepSeek published about the H800 cluster DeepSeek-V3 was trained on (arXiv 2412.19437
§3.1-3.2, arXiv 2505.09343 §4-5), and the CLI costs a plan on it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_topology
from dpcost.cli import app

GBPS = 1e9 / 8  # bytes/s in one Gb/s


def test_the_published_node() -> None:
    t = load_topology("hgx-h800")
    assert t.name == "hgx-h800" and t.gpu.arch == "hopper"
    assert t.domain_size == 8  # "Each node in the H800 cluster contains 8 GPUs connected by NVLink and NVSwitch"
    nvlink, leaf, spine = t.tiers
    # "the NVLink bandwidth in H800 SXM nodes is reduced from 900 GB/s to 400 GB/s": 200 GB/s each way per GPU
    assert nvlink.bandwidth == 200e9
    assert 2 * nvlink.bandwidth == 400e9
    # "eight 400G Infiniband (IB) CX7 NICs" per node of 8 GPUs: one 400 Gb/s = 50 GB/s NIC per GPU
    assert leaf.bandwidth == spine.bandwidth == 400 * GBPS == 50e9
    # NVLink 160 GB/s "roughly 3.2 times that of IB (50 GB/s)"; "about 160GB/s can actually be achieved"
    assert nvlink.effective_bandwidth == pytest.approx(160e9)
    assert nvlink.effective_bandwidth / leaf.bandwidth == pytest.approx(3.2)
    assert nvlink.in_network_reduction is not None and nvlink.in_network_reduction.kind == "nvls"


def test_the_gpu() -> None:
    gpu = load_topology("hgx-h800").gpu
    assert gpu.bf16_dense == 989e12 and gpu.fp8_dense == 1979e12  # H100 SXM's dense peaks, same die
    assert gpu.hbm == pytest.approx(79.11 * 2**30) and gpu.hbm_bandwidth == 3.35e12  # as CUDA reports an H100's
    assert gpu.sms == 132  # "20 out of the 132 SMs available in the H800 GPU"
    # arXiv 2505.09343 Table 4: 432 TFLOP/s is 43.73% MFU and 385 is 38.94%, "based on BF16 peak performance"
    assert 432e12 / gpu.bf16_dense == pytest.approx(0.4373, abs=5e-4)
    assert 385e12 / gpu.bf16_dense == pytest.approx(0.3894, abs=5e-4)


def test_the_fabric_holds_the_training_cluster() -> None:
    t = load_topology("hgx-h800")
    assert [tier.name for tier in t.tiers] == ["nvlink", "leaf", "spine"]  # a two-layer fat tree, no core
    assert t.tiers[1].size == 32 * 8  # 64-port switches: 32 hosts per leaf, one GPU per node in each plane
    assert t.max_gpus == 16384  # MPFT's 8 planes x 2,048
    assert t.max_gpus >= 2048  # DeepSeek-V3's 2,048 H800


def test_estimate_runs_on_it() -> None:
    args = ["estimate", "--model", "llama-8b", "--dp", "16", "--topology", "hgx-h800", "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["topology"]["name"] == "hgx-h800"
    assert doc["setup"]["nodes"] == 2
