"""NCCL's channel counts (dpcost/engine/nccl_channels.py) against the counts public NCCL_DEBUG=INFO logs print
(docs/sources/nccl-channels.md, "What public logs print"), and a call's channels against enqueue.cc's rules."""

from __future__ import annotations

import pytest

from dpcost.catalog import load_topology
from dpcost.engine.nccl_channels import (
    call_channels,
    compute_slowdown,
    nvls_channels,
    p2p_channels,
    peer_channels,
    ring_channels,
)
from dpcost.engine.placement import place

MIB = 1024**2


@pytest.mark.parametrize(
    ("topology", "gpus", "printed"),
    [
        ("dgx-h100", 8, 24),  # p5.48xlarge single-node logs: "24 coll channels"
        ("aws-p5", 8, 24),
        ("dgx-h100", 24, 16),  # NVIDIA/nccl#1453, 3 nodes: "Channel 00/16"
        ("aws-p5", 16, 16),  # KeitaW/p5-nccl-test-2024-07-19 @1c78584, 2 p5 nodes: "16 coll channels"
        ("hgx-h800", 8, 16),  # NVIDIA/nccl#892 (8 NVLinks a GPU)
        ("dgx-b200", 8, 32),  # NVIDIA/nccl#1646: "32 coll channels"
        ("dgx-b300", 8, 32),  # eunomia-bpf/nccl-eBPF docs/eval-plan-b300.md
        ("gb300-nvl72", 60, 32),  # datacrunch-research/nccl-eBPF docs/gb300/mnnvl_eval.md, 8-60 GPUs of one rack
        ("dgx-a100", 8, 24),  # NVIDIA/nccl-tests#100: "Channel 23/24"
        ("snellius-h100", 4, 24),  # odissei-benchmarks/nccl-tests @6df4cb5 runs/1node
        ("snellius-h100", 8, 8),  # the same, runs/2nodes (4 x 200G IB a node)
        ("aws-p4de", 16, 8),  # aws-samples/aws-efa-eks @9d6557e, 2 p4d nodes: "8 coll channels" (the topology says so)
    ],
)
def test_ring_channels_are_what_nccl_prints(topology: str, gpus: int, printed: int) -> None:
    t = load_topology(topology)
    assert ring_channels(t, place(t, gpus)) == printed


@pytest.mark.parametrize(
    ("topology", "gpus", "printed"),
    [
        ("dgx-h100", 8, 16),  # p5.48xlarge single-node logs: "16 nvls channels"
        ("aws-p5", 16, 16),  # KeitaW/p5-nccl-test-2024-07-19: "16 nvls channels" on 2 nodes
        ("dgx-b300", 8, 24),  # eunomia-bpf/nccl-eBPF (NCCL 2.29): 24
        ("gb300-nvl72", 60, 24),  # datacrunch-research/nccl-eBPF (NCCL 2.29.7): 24
    ],
)
def test_nvls_channels_are_what_nccl_prints(topology: str, gpus: int, printed: int) -> None:
    t = load_topology(topology)
    assert nvls_channels(t, place(t, gpus)) == printed


def test_blackwell_nvls_channels_across_nodes_follow_nvls_cc() -> None:
    """transport/nvls.cc:164-214 @v2.30.7: 32 on two nodes with NICs of at least 48 GB/s; 24 beyond two with
    48-96 GB/s NICs, or with 96 GB/s and at most 8 GPUs a node."""
    b200 = load_topology("dgx-b200")  # 400 Gb/s NICs: 50 GB/s
    assert nvls_channels(b200, place(b200, 16)) == 32
    assert nvls_channels(b200, place(b200, 64)) == 24
    b300 = load_topology("dgx-b300")  # 800 Gb/s NICs
    assert nvls_channels(b300, place(b300, 64)) == 24


def test_a_call_runs_on_the_channels_enqueue_cc_gives_it() -> None:
    """enqueue.cc:2070-2096 @v2.30.7: NVLSTree on the NVLS channels; NVLS across nodes on at most the ring's; Ring
    and Tree drop a channel while the bytes are fewer than channels x threads (512 for Simple) x 64 bytes a thread
    (comm.h:49-51), so a 1 MiB Simple ring call on 16 H100s runs on 1 MiB / 32 KiB = 32 -> its 16, and a 256 KiB one
    on 8."""
    h100 = load_topology("dgx-h100")
    two = place(h100, 16)
    assert call_channels(h100, two, "ring", "simple", 1 * MIB) == 16
    assert call_channels(h100, two, "ring", "simple", 256 * 1024) == 8
    assert call_channels(h100, two, "tree", "simple", 1024) == 1
    assert call_channels(h100, two, "nvls_tree", "simple", 1024) == 16
    # Ring LL needs 8 bytes a thread times the ranks: 16 channels x 512 x 8 x 16 = 1 MiB
    assert call_channels(h100, two, "ring", "ll", 512 * 1024) == 8
    b200 = load_topology("dgx-b200")
    assert call_channels(b200, place(b200, 16), "nvls", "simple", 1 << 30) == 16  # min(32 NVLS, 16 ring)
    assert call_channels(h100, place(h100, 1), "ring", "simple", 1 << 30) == 0
    # PAT has no thread count in tuning.cc:244-256, so the cut never applies: every channel
    assert call_channels(h100, two, "pat", "simple", 1024) == 16


def test_point_to_point_channels_are_the_rings_rounded_up_to_a_power_of_two() -> None:
    """graph/paths.cc:977-990 @v2.30.7: p2pnChannels = pow2Up(min(nChannels, 64))."""
    h100 = load_topology("dgx-h100")
    assert p2p_channels(h100, place(h100, 8)) == 32  # 24 -> 32
    assert p2p_channels(h100, place(h100, 16)) == 16


def test_a_send_to_one_peer_runs_on_its_per_peer_channels() -> None:
    """graph/paths.cc:918-1003 @v2.30.7: a network peer gets max(NICs, ceil(NIC GB/s / 14)) channels, 4 for a
    400 Gb/s NIC and 2 for a 200 Gb/s one; an NVLink peer two per NVLink (18 on an H100: 36 -> 64), held to the p2p
    channels (32 on one H100 node)."""
    h100, a100 = load_topology("dgx-h100"), load_topology("dgx-a100")
    assert peer_channels(h100, place(h100, 16)) == 4
    assert peer_channels(a100, place(a100, 16)) == 2
    assert peer_channels(h100, place(h100, 8)) == 32


def test_compute_beside_a_kernel_runs_on_the_sms_it_leaves() -> None:
    """One CTA per channel (enqueue.cc ncclLaunchKernel), one SM each: beside 16 of an H100's 132 the compute runs
    on 116, 132 / 116 as long; a given slowdown holds for every call; a GPU whose SMs are not given counts 132."""
    h100 = load_topology("dgx-h100")
    assert compute_slowdown(h100.gpu, 16) == pytest.approx(132 / 116 - 1)
    assert compute_slowdown(h100.gpu, 16, given=0.25) == 0.25
    assert compute_slowdown(h100.gpu.model_copy(update={"sms": None}), 33) == pytest.approx(33 / 99)


def test_a_small_call_moves_its_bytes_on_the_channels_it_keeps() -> None:
    """enqueue.cc:2092-2096: a Simple Ring call keeps one channel per 32 KiB (512 threads x 64 bytes). On 16 H100s
    the communicator has 16 channels over a ring graph of 8 (Postset's doubling shares its links), so a 1 MiB or a
    256 KiB all-reduce keeps the links' rate, and a 64 KiB one keeps 2 channels and moves its bytes at 2/8 of it."""
    from dpcost.engine.collectives import fastest

    h100 = load_topology("dgx-h100")

    def bandwidth_seconds(size: float) -> float:
        return fastest(h100, "all_reduce", 16, size, algorithm="ring", protocol="simple").bandwidth_seconds

    per_byte = bandwidth_seconds(MIB) / MIB
    assert bandwidth_seconds(256 * 1024) == pytest.approx(per_byte * 256 * 1024)
    assert bandwidth_seconds(64 * 1024) == pytest.approx(4 * per_byte * 64 * 1024)
