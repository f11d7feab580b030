"""Hybrid sharding (issue 19): --shard-group N shards the ZeRO states within N consecutive GPUs and replicates them
across DP / N (FSDP's HYBRID_SHARD, FSDP2's 2-D mesh, DeepSpeed MiCS)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcost.cli import app

BASE = ["estimate", "--model", "llama-70b", "--dp", "64", "--framework", "fsdp", "--zero", "3", "--format", "json"]


def report(*extra: str) -> dict:  # type: ignore[type-arg]
    r = CliRunner().invoke(app, [*BASE, *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _network_bytes(r: dict) -> float:  # type: ignore[type-arg]
    """Bytes one GPU sends per step over the tiers above NVLink."""
    c = r["communication"]
    if c.get("bytes_per_tier"):
        return sum(t["bytes_per_gpu"] for t in c["bytes_per_tier"] if t["tier"] != "nvlink")
    return sum(
        t["bytes_per_gpu"] * x["occurrences"]
        for x in c["collectives"]
        for t in x["whole_message"]["tiers"]
        if t["tier"] != "nvlink" and not t["nested"]
    )


def test_hybrid_sharding_sends_fewer_bytes_across_nodes_than_fsdp() -> None:
    """Llama 70B on 8 nodes: FSDP's gathers and reduce-scatters over all 64 GPUs cross the NICs; HSDP in 8-GPU
    groups keeps them on NVLink and sends only the all-reduce of each 1/8 shard across the 8 replicas:
    2 x 7/8 x 282 GB / 8 = 61.7 GB per GPU, against FSDP's 69.5 GB."""
    fsdp, hsdp = report(), report("--shard-group", "8")
    assert hsdp["communication"]["shard_group"] == 8
    assert _network_bytes(hsdp) < _network_bytes(fsdp)
    gradients = next(x for x in hsdp["communication"]["collectives"] if x["op"] == "reduce_scatter")["bytes"]
    assert _network_bytes(hsdp) == pytest.approx(2 * 7 / 8 * gradients / 8, rel=1e-6)


def test_the_replica_all_reduce_is_a_row_of_its_own_on_the_replica_group() -> None:
    """FSDP's HYBRID_SHARD post-backward: each unit's gradients reduce-scattered in its 8-GPU shard group (NVLink),
    then the 1/8 shard all-reduced across the 8 replicas, one GPU per node (the leaf tier): two rows, each priced on
    its own group, that add up to what the step's schedule spends on them (one stream, one after the other)."""
    c = report("--shard-group", "8")["communication"]
    rows = {x["op"]: x for x in c["collectives"] if x["op"] in ("reduce_scatter", "all_reduce")}
    scatter, across = rows["reduce_scatter"], rows["all_reduce"]
    assert across["purpose"] == "gradients, shards across replicas"
    assert across["bytes"] == pytest.approx(scatter["bytes"] / 8, abs=1)
    assert scatter["bytes_sent_per_rank"] == pytest.approx(7 / 8 * scatter["bytes"], abs=1)
    assert across["bytes_sent_per_rank"] == pytest.approx(2 * 7 / 8 * across["bytes"], abs=1)
    assert [t["tier"] for t in scatter["whole_message"]["tiers"]] == ["nvlink"]
    assert [t["tier"] for t in across["whole_message"]["tiers"]] == ["leaf"]
    assert across["calls"] == scatter["calls"]
    assert sum(x["seconds"] for x in c["collectives"]) == pytest.approx(c["seconds_per_step"], rel=1e-12)


def test_hybrid_sharding_memory_lies_between_fsdp_and_ddp() -> None:
    """ZeRO-3 over 8 holds 8x the sharded states ZeRO-3 over 64 does, and far less than DDP's full copy."""
    fsdp = report()["memory"]["stages"][3]
    hsdp = report("--shard-group", "8")["memory"]["stages"][3]
    ddp = report()["memory"]["stages"][0]
    assert fsdp["total_bytes"] < hsdp["total_bytes"] < ddp["total_bytes"]
    assert hsdp["optimizer_bytes"] == 8 * fsdp["optimizer_bytes"]


def test_without_the_flag_nothing_changes_and_no_hybrid_keys_appear() -> None:
    r = report()
    assert "shard_group" not in r["communication"] and "bytes_per_tier" not in r["communication"]


def test_a_shard_group_must_divide_dp() -> None:
    result = CliRunner().invoke(app, [*BASE, "--shard-group", "7"])
    assert result.exit_code == 2
    assert (
        result.stderr.startswith("dpcost: error: --shard-group: 7 must divide DP 64") and result.stderr.count("\n") == 1
    )


def test_the_shard_and_replica_groups_are_placed_as_fsdp_builds_them() -> None:
    """FSDP's HYBRID_SHARD: the shard group is 8 consecutive ranks (one DGX's NVLink), the replica group one rank of
    each, every 8th: 8 ranks on 8 nodes, one per node (torch/distributed/fsdp/_init_utils.py)."""
    groups = report("--shard-group", "8")["communication"]["groups"]
    assert groups == [
        {"group": "shard", "ranks": 8, "ranks_per_domain": 8.0, "domains": 1, "tiers": ["nvlink"]},
        {"group": "replica", "ranks": 8, "ranks_per_domain": 1.0, "domains": 8, "tiers": ["leaf"]},
    ]
    assert "groups" not in report()["communication"]
    table = CliRunner().invoke(app, [*BASE[:-2], "--shard-group", "8"], env={"COLUMNS": "200"}).stdout
    assert "Hybrid sharding: 64 GPUs = 8 replicas x shard groups of 8" in table


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--zero", "0"], "needs a ZeRO stage that shards (1, 2 or 3): ZeRO-0 replicates every state"),
        (["--framework", "ddp", "--zero", "auto"], "--framework ddp runs ZeRO 0"),
    ],
)
def test_hybrid_sharding_needs_a_stage_that_shards(extra: list[str], said: str) -> None:
    """FSDP's HYBRID_SHARD and FSDP2's 2-D mesh shard within a group; NO_SHARD (ZeRO-0) has nothing to shard."""
    args = ["estimate", "--model", "llama-8b", "--dp", "64", "--shard-group", "8", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("dpcost: error: --shard-group: ") and said in result.stderr
    assert result.stderr.count("\n") == 1


def test_with_the_stage_chosen_hybrid_sharding_leaves_zero0_out() -> None:
    stages = report("--zero", "auto", "--shard-group", "8")["setup"]["zero_stage"]
    assert stages >= 1


def test_the_breakdown_names_the_replica_all_reduce_apart_from_the_reduce_scatter() -> None:
    """The backward's waits are shared among its calls by their seconds (step._breakdown), and under hybrid sharding
    each gradient call is a reduce-scatter then an all-reduce: the exposed all-reduce is its own term, in the ratio
    of the two rows' seconds, and the exposed terms still add up to the exposed communication."""
    r = report("--dp", "512", "--shard-group", "64")
    terms = {t["term"]: t["seconds"] for t in r["time"]["breakdown"]}
    rows = {x["op"]: x["seconds"] for x in r["communication"]["collectives"] if x["op"] != "all_gather"}
    assert terms["exposed all_reduce"] > 0
    assert terms["exposed all_reduce"] / terms["exposed reduce_scatter"] == pytest.approx(
        rows["all_reduce"] / rows["reduce_scatter"], rel=1e-9
    )
    exposed = sum(s for term, s in terms.items() if term.startswith("exposed "))
    assert exposed == pytest.approx(r["time"]["exposed_comm_seconds"], rel=1e-12)
    assert "exposed all_reduce" not in {t["term"] for t in report("--dp", "512")["time"]["breakdown"]}


def test_a_shard_group_too_small_to_fit_is_told_to_shard_over_more_gpus() -> None:
    """Llama 3 70B's states over 8 GPUs (16 bytes x 70.6B / 8 = 141 GB) fill no H100, whatever the micro-batch;
    sharding over all 64 (ZeRO-3 without replicas) is the first remedy, before model parallelism."""
    r = report("--shard-group", "8")
    oom = next(w for w in r["warnings"] if w["code"] == "oom")
    assert "a larger --shard-group, up to --dp 64" in oom["action"]
