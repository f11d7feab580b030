"""aws-ofi-nccl's region tuner (v1.16.3, src/tuner/nccl_ofi_regions.cpp): dpcost's tables equal the script-made
transcription in tests/reference/nccl/, and the choices are those the source's regions state, read off them by
hand below."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from conftest import REFERENCE

from dpcost.catalog import load_topology
from dpcost.engine import tuner_plugin as tp
from dpcost.engine.availability import environment
from dpcost.engine.collectives import collective, fastest
from dpcost.specs import TunerPlugin

TRANSCRIPTION = json.loads((REFERENCE / "nccl" / "aws-ofi-nccl-regions.json").read_text())
MiB, GiB = 2**20, 2**30


def _resolve(vertex: Any, extended: dict[str, Any]) -> tuple[float, float]:
    """A transcribed vertex as a point: numbers, the plane's corner, or a named extend_region() point."""

    def number(v: Any) -> float:
        if v == "max_size":
            return tp.MAX_SIZE
        if v == "max_ranks":
            return tp.MAX_RANKS
        if isinstance(v, dict):
            ((how, name),) = v.items()
            return _resolve(name, extended)[0 if how == "x_of" else 1]
        return float(v)

    if isinstance(vertex, str):
        a, b, _corner = extended[vertex]
        return tp._extended(tuple(map(number, a)), tuple(map(number, b)))  # type: ignore[arg-type]
    return (number(vertex[0]), number(vertex[1]))


def test_the_source_and_the_plugins_named_in_specs_agree() -> None:
    assert TRANSCRIPTION["source"].split("/blob/")[1].split("/")[0] in tp.TUNER_PLUGIN_SOURCE
    assert set(get_args(TunerPlugin)) == set(tp.TUNER_PLUGINS)


@pytest.mark.parametrize("per_node", ["8", "2", "1"])
def test_p5_tables_equal_the_transcription(per_node: str) -> None:
    ours = tp.TUNER_PLUGINS["aws-ofi-nccl-p5"][int(per_node)]
    theirs = TRANSCRIPTION["layouts"][per_node]
    assert set(ours) == set(theirs)
    for op, block in theirs.items():
        expected = [
            (r["algorithm"], r["protocol"], [_resolve(v, block["extended"]) for v in r["vertices"]])
            for r in block["regions"]
        ]
        got = [(r.algorithm, r.protocol, [(float(x), float(y)) for x, y in r.vertices]) for r in ours[op]]
        assert got == expected, (per_node, op)


def test_extend_region_follows_the_line_to_the_planes_edge() -> None:
    # a vertical pair keeps its size; a sloped one meets the far size at 160 + 32 x (100 GiB - 7.5 GiB) / 1.5 GiB
    assert tp._extended((402653184, 2048), (402653184, 4096)) == (402653184, tp.MAX_RANKS)
    size, ranks = tp._extended((8053063680, 160), (9663676416, 192))
    assert size == tp.MAX_SIZE
    assert ranks == pytest.approx(160 + 32 * (100 * GiB - 8053063680) / 1610612736)
    assert ranks == pytest.approx(2133.33, abs=0.01)


ALL = ("ring", "tree", "nvls_tree", "nvls", "collnet", "pat")


@pytest.mark.parametrize(
    ("op", "ranks", "nodes", "size", "expected"),
    [
        # 8 per node: Tree/LL128 holds every size below 288 MiB (301989888 B) at 128 ranks
        ("all_reduce", 128, 16, 32 * MiB, ("tree", "ll128")),
        ("all_reduce", 128, 16, 256 * MiB, ("tree", "ll128")),
        # Ring/LL128 from there to 2 GiB at 128 ranks; NVLSTree along 2-6 GiB; Ring/Simple right of the line
        # (2.5 GiB, 64) - (7.5 GiB, 160), which crosses 128 ranks at 5.83 GiB
        ("all_reduce", 128, 16, 1 * GiB, ("ring", "ll128")),
        ("all_reduce", 128, 16, 4 * GiB, ("nvls_tree", "simple")),
        ("all_reduce", 128, 16, 8 * GiB, ("ring", "simple")),
        # Tree/LL128 reaches 30 MiB at 16 ranks and 36 MiB at 32
        ("all_reduce", 32, 4, 32 * MiB, ("tree", "ll128")),
        ("all_reduce", 32, 4, 64 * MiB, ("ring", "ll128")),
        # all-gather and reduce-scatter at 8 per node have no regions: NCCL chooses
        ("all_gather", 128, 16, 1 * GiB, None),
        # two nodes or fewer: the plugin leaves NCCL to choose
        ("all_reduce", 16, 2, 32 * MiB, None),
        # 4 ranks per node: no table
        ("all_reduce", 16, 4, 32 * MiB, None),
        # 1 per node: all-gather Ring/Simple below the line (4 MiB, 2) - (8 GiB, 2048): from 252 MiB at 64 ranks
        ("all_gather", 64, 64, 1 * GiB, ("ring", "simple")),
        ("all_gather", 64, 64, 16 * MiB, None),
        ("reduce_scatter", 64, 64, 1 * GiB, ("ring", "simple")),
    ],
)
def test_choices_read_off_the_regions(
    op: str, ranks: int, nodes: int, size: float, expected: tuple[str, str] | None
) -> None:
    assert tp.plugin_choice("aws-ofi-nccl-p5", op, ranks, nodes, size, ALL) == expected


def test_nvlstree_is_passed_over_where_nccl_cannot_run_it() -> None:
    # 4 GiB at 128 ranks lies only in NVLSTree's region: without NVLS no region holds it
    without_nvls = tuple(a for a in ALL if a != "nvls_tree")
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 4 * GiB, without_nvls) is None


def test_the_collective_runs_the_plugins_pick_on_aws_p5() -> None:
    p5 = load_topology("aws-p5")
    assert p5.tuner_plugin == "aws-ofi-nccl-p5"
    call = fastest(p5, "all_reduce", 128, 32 * MiB)
    assert call.label == "tree/ll128"
    choice = collective(p5, "all_reduce", 128, 32 * MiB)
    assert choice.best == call
    # dpcost's own fastest would be Tree/Simple: the plugin's pick is slower, and is what the run gets
    assert min(c.seconds for c in choice.candidates) < call.seconds
    without = p5.model_copy(update={"tuner_plugin": None})
    assert fastest(without, "all_reduce", 128, 32 * MiB).seconds < call.seconds


def test_a_forced_protocol_leaves_only_its_regions() -> None:
    # NCCL_PROTO marks the other protocols unavailable in the cost table; the plugin passes over their regions
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 4 * GiB, ALL, "simple") == ("nvls_tree", "simple")
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 4 * GiB, ALL, "ll128") is None
    assert tp.plugin_choice("aws-ofi-nccl-p5", "all_reduce", 128, 16, 32 * MiB, ALL, "simple") is None


def test_a_forced_algorithm_or_protocol_or_nvls_off_is_obeyed() -> None:
    p5 = load_topology("aws-p5")
    assert fastest(p5, "all_reduce", 128, 32 * MiB, protocol="simple").protocol == "simple"
    assert fastest(p5, "all_reduce", 128, 32 * MiB, algorithm="ring").algorithm == "ring"
    # NCCL_ALGO=Tree leaves Tree's regions: the plugin still sets the protocol
    assert fastest(p5, "all_reduce", 128, 32 * MiB, algorithm="tree").label == "tree/ll128"
    assert fastest(p5, "all_reduce", 128, 4 * GiB).label == "nvls_tree/simple"
    assert fastest(environment(p5, nvls=False), "all_reduce", 128, 4 * GiB).algorithm != "nvls_tree"


def test_other_topologies_choose_as_before() -> None:
    h100 = load_topology("dgx-h100")
    assert h100.tuner_plugin is None
    assert fastest(h100, "all_reduce", 128, 32 * MiB) == collective(h100, "all_reduce", 128, 32 * MiB).candidates[0]


def test_show_topology_names_the_plugin_only_where_one_is_declared() -> None:
    from dpcost.render.catalog import topology_tables

    def labels(name: str) -> list[str]:
        return [row[0] for row in topology_tables(load_topology(name))[0].rows]

    assert "tuner plugin" in labels("aws-p5")
    assert "tuner plugin" not in labels("dgx-h100")
