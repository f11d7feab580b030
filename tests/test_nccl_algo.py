"""NCCL_ALGO as NCCL reads it (src/graph/tuning.cc parseList at v2.30.7-1): the algorithms it leaves each collective,
and a run that set it predicted among those."""

from __future__ import annotations

import pytest
from conftest import REFERENCE

from dpcost.accuracy import predict
from dpcost.catalog import load_topology
from dpcost.engine.collectives import collective, fastest
from dpcost.nccl_tests import parse_measurements
from dpcost.specs import nccl_algo_enabled

EVERY = {"tree", "ring", "collnet", "nvls", "nvls_tree", "pat"}
LOG = (REFERENCE / "nccl-tests" / "h100-2n-all_reduce-nccltests309.log").read_text()
GATHER = (REFERENCE / "nccl-tests" / "h200-2n-all_gather-gcpa3ultra.log").read_text()


def test_the_examples_in_nccls_own_comment() -> None:
    # tuning.cc: "Enable ring and collnetdirect for all functions, then select tree and collnetdirect for allreduce
    # and ring for broadcast."
    enabled = nccl_algo_enabled("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring")
    assert enabled["all_reduce"] == {"tree", "collnet"}
    assert enabled["broadcast"] == {"ring"}
    assert enabled["all_gather"] == enabled["reduce_scatter"] == enabled["reduce"] == {"ring", "collnet"}


@pytest.mark.parametrize(
    ("setting", "op", "left"),
    [
        ("^NVLS", "all_reduce", EVERY - {"nvls"}),  # NVLSTree stays: NCCL names them apart
        ("^NVLS,NVLSTree", "all_reduce", EVERY - {"nvls", "nvls_tree"}),
        ("Ring,Tree", "all_gather", {"ring", "tree"}),
        ("RING", "reduce", {"ring"}),
        ("allreduce:tree", "all_gather", EVERY),  # a prefix leaves the other functions alone
        ("allreduce:tree", "all_reduce", {"tree"}),
        ("^CollNetDirect", "all_reduce", EVERY),  # CollNetChain is dpcost's collnet too
        ("", "all_reduce", EVERY),
    ],
)
def test_what_a_setting_leaves(setting: str, op: str, left: set[str]) -> None:
    assert nccl_algo_enabled(setting)[op] == left


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("allreduce:tree;ring", "every entry but the first must name its function"),
        ("allgathr:ring", "no function NCCL names"),
        ("Ring,Fast", "'fast' is not one of"),
    ],
)
def test_what_nccl_refuses_is_refused(setting: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        nccl_algo_enabled(setting)


def _run(log: str, setting: str):  # type: ignore[no-untyped-def]
    return parse_measurements(f"# export NCCL_ALGO={setting}\n{log}", "run.log")


def test_a_log_reads_one_algorithm_as_forced_and_several_as_left_to_nccl() -> None:
    assert (_run(LOG, "Ring").algorithm, _run(LOG, "Ring").nccl_algo) == ("ring", None)
    assert (_run(LOG, "Ring,Tree").algorithm, _run(LOG, "Ring,Tree").nccl_algo) == (None, "Ring,Tree")
    assert (_run(LOG, "^NVLS").algorithm, _run(LOG, "^NVLS").nccl_algo) == (None, "^NVLS")
    assert (_run(LOG, '"^NVLS"').nccl_algo, _run(LOG, "^NVLS).").nccl_algo) == ("^NVLS", "^NVLS")  # quoted, in prose
    # per function: this log is an all_gather's, which the setting sends to Ring
    assert _run(GATHER, "allreduce:tree;allgather:ring").algorithm == "ring"
    assert _run(GATHER, "allreduce:tree").algorithm is None  # every algorithm left to all_gather
    with pytest.raises(ValueError, match="'fast' is not one of"):
        _run(LOG, "Fast")


def test_a_run_that_turned_nvls_off_by_nccl_algo_is_predicted_without_it() -> None:
    h100 = load_topology("dgx-h100")
    plain = {p.algorithm.split("/")[0] for p in predict(parse_measurements(LOG, "run.log"), h100)}
    assert "nvls_tree" in plain  # the default run picks NVLSTree somewhere, which "^NVLS,NVLSTree" takes away
    picked = {p.algorithm.split("/")[0] for p in predict(_run(LOG, "^NVLS,NVLSTree"), h100)}
    assert picked and picked <= {"ring", "tree"}
    both = predict(_run(LOG, "Ring,Tree"), h100)
    for point, ring, tree in zip(both, predict(_run(LOG, "Ring"), h100), predict(_run(LOG, "Tree"), h100), strict=True):
        assert point.predicted_us in (ring.predicted_us, tree.predicted_us)


def test_the_engine_picks_among_what_is_left_and_refuses_nothing_left() -> None:
    h100 = load_topology("dgx-h100")
    size = 1 << 30
    assert fastest(h100, "all_reduce", 16, size).algorithm == "nvls_tree"
    assert fastest(h100, "all_reduce", 16, size, nccl_algo="^NVLSTree").algorithm != "nvls_tree"
    choice = collective(h100, "all_reduce", 16, size, nccl_algo="Ring")
    assert choice.best.algorithm == "ring" and len(choice.candidates) > 1  # every candidate still priced
    with pytest.raises(ValueError, match="leaves no algorithm NCCL runs all_gather with"):
        fastest(h100, "all_gather", 16, size, nccl_algo="Tree")


def test_calibrate_fits_a_run_among_the_algorithms_its_nccl_algo_leaves_and_says_so() -> None:
    from dpcost.calibration import calibrate

    run = _run(LOG, "^NVLS,NVLSTree")
    fit = calibrate(load_topology("dgx-h100"), [run])
    assert fit.runs[0].algorithm == "NCCL_ALGO=^NVLS,NVLSTree"
    assert {p.algorithm.split("/")[0] for p in predict(run, fit.topology)} <= {"ring", "tree"}


def test_a_setting_whose_algorithms_cannot_run_the_forced_protocol_is_priced_as_fastest_prices_it() -> None:
    """NCCL_PROTO=LL with NCCL_ALGO=NVLS (which runs Simple only): collective's best is fastest's call, as for a
    forced algorithm the protocol cannot run (it had raised StopIteration)."""
    h100 = load_topology("dgx-h100")
    size = 1 << 26
    alone = fastest(h100, "all_reduce", 8, size, protocol="ll", nccl_algo="NVLS")
    assert collective(h100, "all_reduce", 8, size, protocol="ll", nccl_algo="NVLS").best == alone
    assert alone.algorithm == "nvls"


def test_a_prefix_and_its_list_are_read_as_strtok_splits_them() -> None:
    # tuning.cc parseList: strtok_r on ":" gives the prefix and the first list; what follows a second ":" is not read
    assert nccl_algo_enabled("allreduce:ring:tree")["all_reduce"] == {"ring"}


def _step_and_algorithms(*flags: str) -> tuple[float, list[str]]:
    """An all-reduce DDP plan of Llama 3 8B on two DGX H100 nodes, whose 1 GiB buckets NCCL runs on NVLSTree."""
    import json

    from typer.testing import CliRunner

    from dpcost.cli import app

    args = ["estimate", "--model", "llama-8b", "--dp", "16", "--zero", "0", "--bucket-size", "1GiB", "-f", "json"]
    done = CliRunner().invoke(app, [*args, *flags])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    return report["summary"]["step_seconds"], [c["algorithm"] for c in report["communication"]["collectives"]]


def test_a_plans_nccl_algo_leaves_nccl_the_algorithms_nccl_would_have() -> None:
    """--nccl-algo is NCCL_ALGO in the run's environment: '^NVLS,NVLSTree' runs as --nvls off does, 'Ring' as
    --algorithm ring forces, and '^NVLS' keeps NVLSTree (NCCL names them apart)."""
    assert _step_and_algorithms()[1] == ["nvls_tree"]
    assert _step_and_algorithms("--nccl-algo", "^NVLS,NVLSTree") == _step_and_algorithms("--nvls", "off")
    assert _step_and_algorithms("--nccl-algo", "Ring") == _step_and_algorithms("--algorithm", "ring")
    assert _step_and_algorithms("--nccl-algo", "^NVLS") == _step_and_algorithms()


def test_a_setting_that_takes_ring_away_is_refused_in_one_line_naming_the_flag() -> None:
    from typer.testing import CliRunner

    from dpcost.cli import app

    done = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "16", "--nccl-algo", "Tree"])
    assert done.exit_code == 2 and done.output.count("\n") == 1
    assert "--nccl-algo" in done.output and "takes Ring away" in done.output


def test_a_topology_carries_its_clusters_nccl_algo(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A cluster whose environment sets NCCL_ALGO (Google's TCPXO profiles of 2024-2025 set Ring,Tree:
    docs/sources/gcp-tcpxo-nccl-profile.md) prices every collective among those; a plan's --nccl-algo overrides it."""
    h100 = load_topology("dgx-h100").model_copy(update={"nccl_algo": "Ring,Tree"})
    assert fastest(h100, "all_reduce", 16, 1 << 30).algorithm in ("ring", "tree")
    assert fastest(h100, "all_reduce", 16, 1 << 30, nccl_algo="^NVLS").algorithm == "nvls_tree"
    from dpcost.specs import TopologySpec

    with pytest.raises(ValueError, match="takes Ring away"):
        TopologySpec.model_validate({**load_topology("dgx-h100").model_dump(), "nccl_algo": "NVLS"})


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("Ring, Tree", "' tree' is not one of"),  # strcasecmp matches whole names: NCCL refuses ' Tree'
        (";Ring", "every entry but the first must name its function"),  # tuning.cc:69, by pointer
        ("::", "names neither a function nor an algorithm"),  # NCCL reads a null pointer there
    ],
)
def test_what_nccl_refuses_as_written_is_refused(setting: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        nccl_algo_enabled(setting)


def test_collnet_before_2_14_stands_for_both_collnet_algorithms() -> None:
    """'CollNet' was NCCL's one CollNet algorithm from 2.6.4 until 2.14.3 split it (src/init.cc ncclAlgoStr):
    excluding both of today's takes dpcost's collnet away, as excluding the old one did."""
    assert "collnet" not in nccl_algo_enabled("^CollNetDirect,CollNetChain")["all_reduce"]
    assert "collnet" not in nccl_algo_enabled("^CollNet")["all_reduce"]
    assert "collnet" in nccl_algo_enabled("^CollNetDirect")["all_reduce"]  # CollNetChain left
