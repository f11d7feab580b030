"""nccl-tests' sendrecv_perf read and predicted: every rank sends to the next and receives from the one before
(src/sendrecv.cu), so the pair across the widest tier sets the time, and across nodes a send runs on the channels
NCCL gives one peer (graph/paths.cc, enqueue.cc), each at most NCCL's own 14 GB/s (NCCL_P2P_PER_CHANNEL_NET_BW)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REFERENCE
from test_nccl_logs import nccl_table, write
from typer.testing import CliRunner

from dpcost.accuracy import predict, sendrecv_per_peer
from dpcost.catalog import load_measurements, load_topology
from dpcost.cli import app
from dpcost.engine.nccl_channels import p2p_chunk, peer_channels, send_channels
from dpcost.engine.p2p import ring_send_recv, send_recv
from dpcost.engine.placement import place, place_group

MIB = 2**20
TOGETHER = {n: REFERENCE / "nccl-tests" / f"b200-{n}n-sendrecv-together.log" for n in (2, 4, 8, 16)}


def test_nccl_2_29_halves_a_peers_channels_as_the_ranks_outgrow_one_round() -> None:
    """graph/paths.cc at 2.29.7/2.30.7: a 400 Gb/s NIC gives ceil(50 / 14) = 4 channels per network peer, halved
    while they times ceil(maxP2pPeers / 8) exceed the 16 p2p channels of a B200 communicator across nodes. Together's
    NCCL_DEBUG=INFO runs print "16 p2p channels" and 4 per peer at 2 nodes (16 ranks), 1 per peer at 32 (256 ranks);
    nccl-tests' sendrecv sets maxP2pPeers 2 from v2.18.3 with NCCL 2.30, which keeps the 4."""
    b200 = load_topology("dgx-b200")
    assert [peer_channels(b200, place(b200, n)) for n in (16, 32, 64, 128, 256)] == [4, 4, 2, 1, 1]
    assert peer_channels(b200, place(b200, 256), max_peers=2) == 4


def test_before_2_29_a_network_peer_had_two_channels() -> None:
    """graph/paths.cc at 2.28.9: two channels per network peer, halved while 2 x ranks > 4 x the ring's 16 channels,
    so one beyond 32 ranks; 2.29.2's release notes: "Improves the default number of channels per net peer"."""
    b200 = load_topology("dgx-b200")
    assert [peer_channels(b200, place(b200, n), release=(2, 28)) for n in (16, 32, 64)] == [2, 2, 1]


def test_a_send_takes_more_channels_as_its_bytes_fill_their_chunks() -> None:
    """enqueue.cc:909-929 at 2.30.7. Across nodes (128 KiB chunks): at 16 ranks one channel serves every rank in a
    round (4 x 16 > 16), then one more per 64 KiB, doubled while a part is over 128 KiB, up to 4: so 4 from 512 KiB.
    Inside one A100 node (512 KiB chunks; 32 per peer, 4 for 8 ranks in a round) the parts may reach 16 MiB: 8
    channels at 128 MiB, 16 at 256 MiB, where li-plus's A100 run steps from 111 to 189 GB/s."""
    b200, a100 = load_topology("dgx-b200"), load_topology("dgx-a100")
    across = place(b200, 16)
    assert [send_channels(b200, across, s, 4) for s in (1024, 64 * 1024, 256 * 1024, 512 * 1024, 64 * MIB)] == [
        1,
        1,
        2,
        4,
        4,
    ]
    one_node = place(a100, 8)
    sizes = (64 * MIB, 128 * MIB, 256 * MIB, 1024 * MIB)
    assert [send_channels(a100, one_node, s, 32) for s in sizes] == [4, 8, 16, 32]


def test_a_pairs_small_sends_run_on_fewer_channels() -> None:
    """A pipeline's send across nodes on its own 2-rank communicator (an H100 pair: 4 p2p channels, 4 per peer):
    2 channels serve both ranks in one round (enqueue.cc:1143-1146), so a 256 KiB send runs on 2 (28 GB/s), below
    the NIC; from 512 KiB on all 4, where the NIC binds as before the channels were priced."""
    h100 = load_topology("dgx-h100")
    pair = place_group(h100, [0, 8])
    assert send_channels(h100, pair, 256 * 1024, 4) == 2 and send_channels(h100, pair, 512 * 1024, 4) == 4
    assert send_recv(h100, pair, 256 * 1024).bandwidth_seconds == pytest.approx(256 * 1024 / 28e9)
    nic = h100.tiers[1].effective_bandwidth
    assert send_recv(h100, pair, 64 * MIB).bandwidth_seconds == pytest.approx(64 * MIB / nic)


def test_the_doubled_chunk_on_arm_blackwell_hosts_came_with_2_29() -> None:
    """init.cc:830-834 at 2.30.7 (not in 2.28.9): 256 KiB across GB200 racks, 128 KiB on older releases; 512 KiB
    inside a rack."""
    gb200 = load_topology("gb200-nvl72")
    two_racks = place(gb200, 144)
    assert p2p_chunk(gb200, two_racks) == 256 * 1024 and p2p_chunk(gb200, two_racks, (2, 28)) == 128 * 1024
    assert p2p_chunk(gb200, place(gb200, 72)) == 512 * 1024


def test_across_nodes_a_send_moves_at_most_14_gbs_a_channel() -> None:
    """One channel across nodes: 14 GB/s (NCCL's NCCL_P2P_PER_CHANNEL_NET_BW), below a 400 Gb/s NIC; four: the NIC."""
    b200 = load_topology("dgx-b200")
    pair = place_group(b200, [0, 8])
    one = send_recv(b200, pair, 256 * MIB, place(b200, 128), per_peer=1)
    assert one.bandwidth_seconds == pytest.approx(256 * MIB / 14e9)
    four = send_recv(b200, pair, 256 * MIB, place(b200, 16), per_peer=4)
    assert four.bandwidth_seconds < 256 * MIB / 40e9


@pytest.mark.parametrize(("nodes", "per_peer", "busbw"), [(2, 4, 43.14), (4, 4, 44.33), (8, 2, 26.13), (16, 1, 14.75)])
def test_together_b200_runs_at_256_mib(nodes: int, per_peer: int, busbw: float) -> None:
    """Together's B200 sendrecv_perf runs on NCCL 2.29.7 (out-of-place busbw at 256 MiB as printed): the release
    gives the channels per peer their INFO runs print, and the time comes within 10% at every node count."""
    m = load_measurements(str(TOGETHER[nodes]))
    b200 = load_topology("dgx-b200")
    assert m.nccl_release == (2, 29) and m.ops == ("send_recv",)
    assert sendrecv_per_peer(m, b200, m.ranks or 0) == per_peer
    predicted = ring_send_recv(b200, m.ranks or 0, 256 * MIB, per_peer).seconds
    assert predicted == pytest.approx(256 * MIB / (busbw * 1e9), rel=0.10)
    measured = {p.size_bytes: p for p in predict(m, b200) if p.column == "out-of-place"}[256 * MIB]
    assert abs(measured.error) < 0.10


def test_inside_one_node_the_pair_moves_over_nvlink() -> None:
    """Two H100s over NVLink: the Smol Training Playbook's sendrecv_perf chart reads 364.93 GB/s at 8 GiB; NVLink's
    effective rate, nothing per channel (p2p.py: not modelled inside a node)."""
    h100 = load_topology("dgx-h100")
    call = ring_send_recv(h100, 2, 8 * 2**30)
    assert call.algbw / 1e9 == pytest.approx(364.93, rel=0.05)


def test_the_log_s_printed_channels_win_over_its_release(tmp_path: Path) -> None:
    text = "NCCL INFO 16 coll channels, 16 p2p channels, 2 p2p channels per peer\nNCCL version 2.29.7+cuda12.9\n"
    table = nccl_table(16, "sum", -1, False, 1, ("0", "N/A"))
    m = load_measurements(str(write(tmp_path, text + table)))
    assert (m.p2p_per_peer, m.nccl_release) == (2, (2, 29))
    assert sendrecv_per_peer(m, load_topology("dgx-h100"), 16) == 2
    newer = "# nccl-tests version 2.19.6 nccl-headers=23007 nccl-library=23007\n"
    m = load_measurements(str(write(tmp_path, newer + nccl_table(256, "sum", -1, False, 1, ("0", "N/A")))))
    assert (m.nccl_release, m.tests_release, m.headers_release) == ((2, 30), (2, 19, 6), (2, 30))
    assert sendrecv_per_peer(m, load_topology("dgx-h100"), 256) == 4  # maxP2pPeers 2: no halving at 256 ranks


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--op", "send_recv", "-n", "1"], "give 2 ranks or more"),
        (["--op", "send_recv", "--algorithm", "ring"], "no algorithm to force"),
    ],
)
def test_collective_refuses_what_a_send_ring_cannot_be(args: list[str], needle: str) -> None:
    result = CliRunner().invoke(app, ["collective", *args])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and needle in result.stderr, result.stderr


def test_a_log_cut_without_its_rank_lines_keeps_its_release(tmp_path: Path) -> None:
    """With its ranks given by --ranks, the 16-node run is priced on NCCL 2.29.7's one channel per peer, as with
    its '# Rank' lines."""
    text = "".join(ln for ln in TOGETHER[16].read_text().splitlines(True) if "#  Rank" not in ln)
    cut = write(tmp_path, text, "cut.log")
    result = CliRunner().invoke(
        app, ["collective", "--compare", str(cut), "--ranks", "128", "-t", "dgx-b200", "-f", "markdown"]
    )
    assert result.exit_code == 0, result.stderr
    assert "on 1 channel per peer (NCCL 2.29's" in result.stdout


def test_a_one_rank_run_is_refused_by_name_in_calibrate(tmp_path: Path) -> None:
    one = write(tmp_path, nccl_table(1, "sum", -1, False, 1, ("0", "N/A")), "one.log")
    result = CliRunner().invoke(
        app, ["calibrate", str(one), str(REFERENCE / "nccl-tests" / "h100-2n-all_reduce-nccltests309.log")]
    )
    assert result.exit_code == 2 and "one.log: sendrecv_perf on 1 rank" in result.stderr, result.stderr


def test_collective_compares_a_sendrecv_run() -> None:
    """`collective --compare` prices every measured size of the 16-node run as the scored comparison does, and says
    on how many channels (1: NCCL 2.29's at 128 ranks)."""
    compare = ["collective", "--compare", str(TOGETHER[16]), "-t", "dgx-b200"]
    rows = json.loads(CliRunner().invoke(app, [*compare, "-f", "json"]).stdout)
    assert {r["op"] for r in rows} == {"send_recv"} and len(rows) == 19
    largest = rows[-1]
    assert largest["size_bytes"] == 256 * MIB and largest["measured_us"]["out-of-place"] == 18201.0
    priced = ring_send_recv(load_topology("dgx-b200"), 128, 256 * MIB, 1)
    assert largest["time_us"] == pytest.approx(priced.seconds * 1e6)
    assert "on 1 channel per peer (NCCL 2.29's" in CliRunner().invoke(app, [*compare, "-f", "markdown"]).stdout


@pytest.mark.parametrize("op", ["send_recv", "all_to_all"])
def test_a_forced_protocol_is_said_not_to_apply_to_grouped_send_recv(op: str) -> None:
    """NCCL_PROTO picks no protocol dpcost prices a grouped send/recv on (p2p.py prices Simple): the assumptions say so
    beside the protocol line, and the times are those without it."""
    args = ["collective", "--op", op, "-n", "16", "--sizes", "1M", "-f", "markdown"]
    forced = CliRunner().invoke(app, [*args, "--protocol", "ll"]).stdout
    assert f"- {op}: NCCL's grouped send/recv, priced on Simple whatever the protocol" in forced
    free = CliRunner().invoke(app, args).stdout
    assert "whatever the protocol" not in free
    assert [ln for ln in forced.splitlines() if ln.startswith("| 1.00 MiB")] == [
        ln for ln in free.splitlines() if ln.startswith("| 1.00 MiB")
    ]
