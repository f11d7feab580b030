"""The communicator a pipeline's send/recv runs on (docs/sources/pipeline-p2p.md): Megatron batches the sends it
waits for, which PyTorch 1.12 and later runs on the whole PP group's communicator, and NCCL gives each peer of a
group above 8 ranks fewer channels (graph/paths.cc:993-1004 at v2.30.7)."""

from __future__ import annotations

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_topology
from dpcost.engine.layout_step import pp_send_communicator
from dpcost.engine.nccl_channels import peer_channels
from dpcost.engine.p2p import send_recv
from dpcost.engine.placement import place_group

# Llama 3 405B at its published TP 8 x PP 16 (arXiv 2407.21783 section 3.3.2) and DP 4: 16 stages of 4 dgx-h100 nodes
PP16 = [
    "estimate", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "4", "--global-batch", "64",
    "--seq-len", "8192", "--sequence-parallel",
]  # fmt: skip
SEND = ("pp", "send_recv", "activations and their gradients")


def _send(r: dict) -> dict:
    return next(c for c in r["layout"]["calls"] if (c["dimension"], c["op"], c["purpose"]) == SEND)


def test_waited_for_sends_are_batched_on_the_group_and_overlapped_ones_are_lone() -> None:
    """Megatron: batch_p2p_comm = not overlap_p2p_comm (megatron/training/arguments.py)."""
    assert pp_send_communicator(overlap=False) == "group"
    assert pp_send_communicator(overlap=True) == "pair"
    assert pp_send_communicator(overlap=False, given="pair") == "pair"


def test_a_16_rank_pipeline_group_gives_each_peer_half_a_pairs_channels() -> None:
    """Across nodes with 400 Gb/s NICs NCCL gives a peer ceil(50 / 14) = 4 channels, halved while 4 x ceil(peers / 8)
    exceeds the p2p channels (4 for one GPU per node): a pair keeps 4, 16 ranks get 2, and 8 ranks keep 4."""
    t = load_topology("dgx-h100")
    stride = 32  # TP 8 x DP 4: each stage on its own nodes
    assert peer_channels(t, place_group(t, [0, stride])) == 4
    assert peer_channels(t, place_group(t, [k * stride for k in range(16)])) == 2
    assert peer_channels(t, place_group(t, [k * stride for k in range(8)])) == 4


def test_a_16_stage_1f1b_send_runs_on_two_channels_of_14_gbs() -> None:
    """The non-interleaved 1F1B waits for its sends, so Megatron batches them on the PP group's communicator: each
    runs on 2 channels at NCCL's own 14 GB/s a channel on the network (NCCL_P2P_PER_CHANNEL_NET_BW), 28 GB/s; on a
    pair's communicator on 4, where the NIC's rate binds first. The report says which."""
    grouped, paired = report(*PP16, "--format", "json"), report(*PP16, "--pp-send-comm", "pair", "--format", "json")
    assert grouped["layout"]["pp_send_comm"] == "group" and paired["layout"]["pp_send_comm"] == "pair"
    send = _send(grouped)
    t = load_topology("dgx-h100")
    slowest = place_group(t, [224, 256])  # stages 7 and 8, across the 256-GPU leaf: the pair the step waits for
    latency = send_recv(t, slowest, send["message_bytes"]).latency_seconds  # one network step, both communicators
    assert send["seconds_per_call"] == pytest.approx(latency + send["message_bytes"] / 28e9, rel=1e-9)
    assert _send(paired)["seconds_per_call"] < send["seconds_per_call"]
    assert grouped["time"]["step_seconds"] > paired["time"]["step_seconds"]
    code, out, _ = run(*PP16)
    assert code == 0 and "PP's send/recv on the PP group's communicator" in " ".join(out.split())


def test_interleaved_sends_overlap_on_pairs_and_small_pipelines_are_unchanged() -> None:
    """An overlapped send is a lone isend/irecv, on its pair's 2-rank communicator; a group of 8 stages keeps a
    pair's 4 channels per peer, so the communicator changes nothing there."""
    interleaved = report(*PP16, "--virtual-stages", "2", "--format", "json")
    assert interleaved["layout"]["pp_send_comm"] == "pair"
    pp8 = [*PP16[:6], "8", *PP16[7:]]
    assert _send(report(*pp8, "--format", "json"))["seconds_per_call"] == pytest.approx(
        _send(report(*pp8, "--pp-send-comm", "pair", "--format", "json"))["seconds_per_call"], rel=1e-12
    )


def test_an_unknown_communicator_is_one_line_and_exit_2() -> None:
    code, out, err = run(*PP16, "--pp-send-comm", "trio")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("dpcost: error: --pp-send-comm") and "group" in err and "pair" in err, err
