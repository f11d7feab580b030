"""LongCat-Flash-Lite (model_type longcat_flash_ngram; meituan-longcat's remote modeling_longcat_ngram.py):
LongCat-Flash's layers with NgramEmbedding beside the token embedding. NgramEmbedding._init_ngram_embeddings builds k x
(n - 1) tables (emb_split_num k, emb_neighbor_num n), the i-th an nn.Embedding of int(m + 2i + 1) rows (m =
ngram_vocab_size_ratio x vocab_size) and hidden // (k (n - 1)) columns, each followed by an nn.Linear back to the hidden
width without bias. The team's release note puts 31.4B of the 68.5B in them (tests/reference/hf-configs/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REFERENCE, estimate_refusal, spec_from_config

from dpcost.engine.params import count_params
from dpcost.engine.prepare import units

LITE = json.loads((REFERENCE / "hf-configs" / "longcat-flash-lite.json").read_text())
M, TABLES, WIDTH, HIDDEN = 78 * 131072, 4 * (4 - 1), 3072 // 12, 3072


def test_the_tables_are_the_sources_shapes(tmp_path: Path) -> None:
    """Twelve tables of 256 columns, of M + 1, M + 3, ..., M + 23 rows; twelve projections 256 -> 3,072."""
    tables = sum((M + 2 * i + 1) * WIDTH for i in range(TABLES))
    projections = TABLES * WIDTH * HIDDEN
    components = dict(count_params(spec_from_config(tmp_path, LITE)).components)
    assert components["n-gram embedding tables"] == tables == 31_406_985_216
    assert components["n-gram projections"] == projections == 9_437_184
    assert (tables + projections) / 1e9 == pytest.approx(31.4, abs=0.05)  # the release note's 31.4B


def test_the_tables_add_parameters_but_no_matmul(tmp_path: Path) -> None:
    """The same file read as LongCat-Flash (no n-gram keys) holds the tables' and projections' fewer parameters; the
    tables are looked up, so the active count without lookups grows by the projections alone."""
    plain = {k: v for k, v in LITE.items() if k not in ("ngram_vocab_size_ratio", "emb_neighbor_num", "emb_split_num")}
    plain["model_type"], plain["architectures"] = "longcat_flash", ["LongcatFlashForCausalLM"]
    lite, flash = count_params(spec_from_config(tmp_path, LITE)), count_params(spec_from_config(tmp_path, plain))
    tables, projections = 31_406_985_216, 9_437_184
    assert lite.total - flash.total == tables + projections
    assert lite.active_excl_embedding - flash.active_excl_embedding == projections


def test_each_table_is_a_unit_of_its_own(tmp_path: Path) -> None:
    """MindSpeed-LLM's FSDP2 backend hooks each embedder as an FSDP group of its one parameter
    (_install_ngram_embedding_early_post_backward): ZeRO-3 gathers one table at a time, after the token embedding's
    unit, which keeps the twelve projections and their 2 x 12 x 256 x 3,072 FLOPs a token; the lookups run none."""
    spec = spec_from_config(tmp_path, LITE)
    pieces = units(count_params(spec), spec, 4096)
    tables = pieces[1 : 1 + TABLES]
    assert [u.tensors for u in tables] == [((M + 2 * i + 1) * WIDTH,) for i in range(TABLES)]
    assert WIDTH * HIDDEN * TABLES in pieces[0].tensors
    assert max(u.params for u in pieces) == (M + 2 * TABLES - 1) * WIDTH
    assert {u.compute_share for u in tables} == {0.0} and pieces[0].compute_share > 0
    assert sum(u.params for u in pieces) == count_params(spec).total


def test_a_layout_is_refused_by_name(tmp_path: Path) -> None:
    """Megatron-Core has no n-gram embedding: a layout with TP, CP, PP or EP is refused, pure DP is costed."""
    err = estimate_refusal(tmp_path, LITE, "--ep", "8")
    assert "n-gram embedding tables" in err


def test_the_ngram_keys_are_required(tmp_path: Path) -> None:
    """LongcatFlashNgramConfig defaults ngram_vocab_size_ratio to None, from which NgramEmbedding builds nothing it
    can run: the file must give it."""
    without = {k: v for k, v in LITE.items() if k != "ngram_vocab_size_ratio"}
    assert "ngram_vocab_size_ratio" in estimate_refusal(tmp_path, without)
    assert "emb_neighbor_num" in estimate_refusal(tmp_path, dict(LITE, emb_neighbor_num=1))
