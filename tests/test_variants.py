"""Data parallelism that communicates less (issue 22): each variant's volume in closed form against its source, and
the two-datacenter case the issue names. Expected numbers are written out by hand from the papers' statements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli as run

from dpcost.catalog import load_model, load_topology
from dpcost.engine.params import count_params
from dpcost.engine.variants import (
    diloco_bytes_per_step,
    one_bit_bytes,
    powersgd_values,
    price,
    stage_calls,
    zeropp_calls,
    zeropp_cross_node_volume,
)

TWO_SITES = str(Path(__file__).resolve().parents[1] / "examples" / "two-datacenters.yaml")


def test_powersgd_sends_each_matrix_as_its_two_rank_r_factors() -> None:
    """Vogels et al. 2019: an m x n matrix as P (m x r) and Q (n x r). A 4096 x 14336 MLP weight at rank 4 sends
    (4096 + 14336) x 4 = 73,728 values instead of 58,720,256; an 8 x 8 matrix would not shrink 2x at rank 4
    (64 factor values), so PyTorch's hook (min_compression_rate 2) all-reduces its 64 values whole."""
    assert powersgd_values([(4096, 14336)], 4) == 73_728
    assert powersgd_values([(8, 8)], 4) == 64
    assert powersgd_values([(4096, 14336), (8, 8)], 1) == 18_432 + 16


def test_one_bit_adam_sends_two_bits_per_value() -> None:
    """DeepSpeed's compressed all-reduce: 1 bit per value to the servers (all-to-all) and 1 bit back (all-gather),
    each (N - 1)/N of the buffer, plus a 4-byte scale per phase: 8e9 values on 64 ranks, 2 x 63/64 x 1e9 bytes."""
    assert one_bit_bytes(8e9, 64) == pytest.approx(2 * 63 / 64 * (1e9 + 4))
    bits_per_value = one_bit_bytes(8e9, 1024) * 8 / 8e9
    assert bits_per_value == pytest.approx(2.0, rel=0.002)


def test_zeropp_cuts_cross_node_traffic_4x_as_its_paper_says() -> None:
    """Wang et al. 2023, section 4: ZeRO-3 moves 3M across nodes (forward and backward all-gathers, reduce-scatter,
    16-bit), ZeRO++ 0.75M (qwZ 0.5M, hpZ 0, qgZ 0.25M): 4x less. Priced on 8 DGX H100 nodes (64 GPUs), the bytes
    each GPU's NIC carries fall from 5.91 GB to 1.42 GB for an 8B model: 4.15x (the ring keeps 63/64 of the paper's
    M, and qgZ's all-to-all keeps 7/8)."""
    full = frozenset({"hpz", "qwz", "qgz"})
    assert zeropp_cross_node_volume(frozenset()) / zeropp_cross_node_volume(full) == 4.0
    topology = load_topology("dgx-h100")
    base = price(topology, stage_calls(8e9, 3, 2.0, 2.0, 64, 1)).tier_bytes["leaf"]
    zeropp = price(topology, zeropp_calls(8e9, full, 2.0, 2.0, 64, 8, 1)).tier_bytes["leaf"]
    assert base == pytest.approx(3 * 63 / 64 * 16e9 / 8)
    assert base / zeropp == pytest.approx(4.0, rel=0.05)


def test_the_report_shows_zeropps_4x_less_traffic_leaving_the_node() -> None:
    """On a non-blocking fat tree (dgx-h100: leaf and spine at one speed) the comparison is on the leaf links, which
    every byte that leaves a node crosses: ZeRO-3 moves 3M there per step and ZeRO++ 0.75M (Wang et al. 2023, section
    1: 4x less cross-node traffic), each ring and all-to-all priced as NCCL runs it."""
    code, out, err = run("estimate", "-m", "llama-70b", "--dp", "512", "--zeropp", "hpz,qwz,qgz", "--format", "json")
    assert code == 0, err
    zero3, zeropp = json.loads(out)["variants"]
    assert zero3["top_tier"] == zeropp["top_tier"] == "leaf"
    assert zero3["top_tier_bytes"] / zeropp["top_tier_bytes"] == pytest.approx(4.0, rel=0.02)


def test_diloco_exchanges_the_model_once_every_h_steps() -> None:
    """Douillard et al. 2023: the fp32 parameter deltas once per H inner steps: 8e9 x 4 bytes / 100 per step."""
    assert diloco_bytes_per_step(8e9, 100) == 3.2e8


def test_across_two_datacenters_the_link_binds_and_diloco_cuts_it_about_100_fold() -> None:
    code, out, err = run(
        "estimate", "-m", "llama-8b", "--dp", "1024", "-t", TWO_SITES, "--compare-variants", "--format", "json"
    )
    assert code == 0, err
    doc = json.loads(out)
    warning = doc["summary"]["top_warning"]
    assert warning["code"] == "shared-link-binds" and "--sync-every 100" in warning["action"]
    rows = {r["name"]: r for r in doc["variants"]}
    plain, diloco = rows["plain DP"], rows["DiLoCo H=100"]
    assert plain["top_tier"] == diloco["top_tier"] == "dci"
    assert 80 <= plain["top_tier_bytes"] / diloco["top_tier_bytes"] <= 250
    assert diloco["step_seconds"] < 0.5 * plain["step_seconds"]
    params = count_params(load_model("llama-8b")).total
    assert diloco["added_memory_bytes"] == int(8 * params / 512)  # fp32 outer copy and momentum, over a site
    code, table, _ = run("estimate", "-m", "llama-8b", "--dp", "1024", "-t", TWO_SITES, "--compare-variants")
    assert "DiLoCo H=100" in table and "x less" in table and "convergence" in table


def test_a_variant_flag_reports_the_variant_beside_the_plain_plan() -> None:
    code, out, err = run("estimate", "-m", "llama-8b", "--dp", "64", "--zeropp", "hpz,qwz", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["variants"]
    assert [r["name"] for r in rows] == ["ZeRO-3", "ZeRO++ hpz+qwz"]
    params = count_params(load_model("llama-8b")).total
    assert rows[1]["added_memory_bytes"] == int(2 * params / 8)  # hpZ's secondary 16-bit copy over the node
    code, _, err = run("estimate", "-m", "llama-8b", "--dp", "64", "--zeropp", "hpz", "--sync-every", "10")
    assert code == 2 and "one variant at a time" in err
    code, _, err = run("estimate", "-m", "llama-8b", "--dp", "64", "--tp", "2", "--compression", "powersgd")
    assert code == 2 and err.startswith("dpcost: error: --compression:")


def test_the_stage_table_holds_each_variants_memory_in_its_column() -> None:
    """Each variant's row in the stage table is the stage it runs on with what it keeps for the whole run in the
    column it belongs to: hpZ's secondary 16-bit parameter shard over the node (ZeRO++ paper, section 4.2) in params;
    1-bit Adam's worker and server error feedback, fp32 (Tang et al. 2021, Algorithm 1) in the optimizer; DiLoCo's
    outer fp32 parameters and momentum (Douillard et al. 2023, Algorithm 1), sharded as the inner plan shards."""
    params = count_params(load_model("llama-8b")).total
    code, out, err = run("estimate", "-m", "llama-8b", "--dp", "64", "--zeropp", "hpz", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    zero3, hpz = doc["memory"]["stages"][3], doc["variants"][1]["memory"]
    assert hpz["stage"] == 3
    assert hpz["params_bytes"] - zero3["params_bytes"] == pytest.approx(2 * params / 8, abs=1)
    assert hpz["total_bytes"] - zero3["total_bytes"] == pytest.approx(2 * params / 8, abs=2)
    assert hpz["optimizer_bytes"] == zero3["optimizer_bytes"] and hpz["grads_bytes"] == zero3["grads_bytes"]
    assert doc["variants"][1]["memory_bytes"] == hpz["total_bytes"]
    assert doc["variants"][0]["memory"] is None  # the plain plan holds nothing more

    code, out, err = run(
        "estimate", "-m", "llama-8b", "--dp", "64", "--zero", "0", "--recompute", "full", "--compression",
        "1bit-adam", "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    zero0, one_bit = doc["memory"]["stages"][0], doc["variants"][1]["memory"]
    assert one_bit["optimizer_bytes"] - zero0["optimizer_bytes"] == pytest.approx(4 * params * (1 + 1 / 64), abs=1)

    diloco = ("estimate", "-m", "llama-8b", "--dp", "1024", "-t", TWO_SITES, "--zero", "3", "--sync-every", "100")
    code, out, err = run(*diloco, "--format", "json")
    assert code == 0, err
    outer = json.loads(out)["variants"][1]
    assert outer["memory"]["stage"] == 3 and outer["recompute"] is not None
    assert outer["added_memory_bytes"] == int(8 * params / 512)  # over a site's 512 GPUs
    code, out, err = run(*diloco)
    assert code == 0, err
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("3 + DiLoCo H=100"))
    assert "yes /" in row
    assert "3 + DiLoCo H=100: ZeRO-3 holding 125 MB per GPU more through the step" in " ".join(out.split())


def test_no_variant_flag_leaves_the_report_as_it_was() -> None:
    code, out, _ = run("estimate", "-m", "llama-8b", "--dp", "64", "--format", "json")
    assert code == 0 and "variants" not in json.loads(out)


def test_the_readme_table_is_current() -> None:
    """The README's two-site table is what --compare-variants prints today."""
    from dpcost.render.table import gb, pct
    from dpcost.units import fmt_bytes, fmt_seconds

    code, out, err = run(
        "estimate", "-m", "llama-8b", "--dp", "1024", "-t", TWO_SITES, "--compare-variants", "--format", "json"
    )
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["variants"]}
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    plain, hybrid, diloco = rows["plain DP"], rows["hybrid sharding (512 per replica)"], rows["DiLoCo H=100"]
    less = plain["top_tier_bytes"] / diloco["top_tier_bytes"]
    expected = [
        f"| plain DP (ZeRO-3) | {fmt_bytes(plain['top_tier_bytes'])} | {fmt_seconds(plain['step_seconds'])} | "
        f"{gb(plain['memory_bytes'])} | {pct(plain['scaling_efficiency'])} |",
        f"| hybrid sharding, a replica per site | {fmt_bytes(hybrid['top_tier_bytes'])} | "
        f"{fmt_seconds(hybrid['step_seconds'])} | {gb(hybrid['memory_bytes'])} | {pct(hybrid['scaling_efficiency'])} |",
        f"| DiLoCo H=100 | {fmt_bytes(diloco['top_tier_bytes'])} ({less:.0f}x less) | "
        f"{fmt_seconds(diloco['step_seconds'])} | {gb(diloco['memory_bytes'])} (+{gb(diloco['added_memory_bytes'])}) | "
        f"{pct(diloco['scaling_efficiency'])} |",
    ]
    for line in expected:
        assert line in readme, line


def test_plan_prices_the_variants_of_its_best_pure_dp_plan_when_asked() -> None:
    code, out, err = run(
        "plan", "-m", "llama-8b", "--gpus", "1024", "-t", TWO_SITES, "--top", "1", "--compare-variants",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["variants"]}
    assert rows["DiLoCo H=100"]["step_seconds"] < rows["plain DP"]["step_seconds"]
    code, out, _ = run("plan", "-m", "llama-8b", "--gpus", "64", "--top", "1", "--format", "json")
    assert code == 0 and "variants" not in json.loads(out)


def test_fp8_and_int8_gradients_carry_their_block_scales_when_given() -> None:
    """1 byte per value, plus an fp32 scale per block of 128 when --grad-block 128 says so: 1 + 4/128 = 1.03125
    bytes per parameter; without --grad-block, fp8's volume is what it was (1 byte per parameter)."""
    params = count_params(load_model("llama-8b")).total
    code, out, err = run("estimate", "-m", "llama-8b", "--dp", "64", "--grad-dtype", "int8", "--grad-block", "128",
                         "--format", "json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["communication"]["gradient_bytes"] == int(params * 1.03125)
    code, out, _ = run("estimate", "-m", "llama-8b", "--dp", "64", "--grad-dtype", "fp8", "--format", "json")
    assert json.loads(out)["communication"]["gradient_bytes"] == int(params)


def test_the_verdict_says_what_the_variant_asked_for_gives() -> None:
    code, out, err = run(
        "estimate", "-m", "llama-8b", "--dp", "1024", "-t", TWO_SITES, "--sync-every", "100", "--brief"
    )
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("variant"))
    assert "DiLoCo H=100: 706 ms per step (2.75x faster than plain DP's 1.94 s)" in line
