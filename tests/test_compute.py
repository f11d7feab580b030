"""FLOPs per token (PaLM appendix B: 6N + 12LHQT) and compute time."""

from __future__ import annotations

import pytest

from dpcost.catalog import load_model
from dpcost.engine.compute import flops_per_token
from dpcost.engine.params import count_params


def test_llama_70b_training_flops_per_token() -> None:
    spec = load_model("llama-70b")
    c = count_params(spec)
    s = 4096
    f = flops_per_token(c, spec.architecture, s)
    n_matmul = c.total - 128256 * 8192  # the input embedding is a lookup
    assert f.model == pytest.approx(6 * n_matmul + 12 * 80 * 64 * 128 * s, rel=1e-12)
    assert f.forward == pytest.approx(f.model / 3)
    assert f.backward == pytest.approx(2 * f.model / 3)
    assert f.recompute == 0


def test_tied_embeddings_count_the_output_projection() -> None:
    spec = load_model("gpt3-175b")
    c = count_params(spec)
    f = flops_per_token(c, spec.architecture, 2048)
    n_matmul = c.total - 2048 * 12288  # learned positions are a lookup; the tied table is the output head
    assert f.model == pytest.approx(6 * n_matmul + 12 * 96 * 96 * 128 * 2048, rel=1e-12)


def test_mla_attention_term_and_moe_active() -> None:
    spec = load_model("deepseek-v3")
    c = count_params(spec)
    f = flops_per_token(c, spec.architecture, 4096)
    attention = 6 * 61 * 128 * (192 + 128) * 4096
    assert f.model == pytest.approx(6 * (c.active - 129280 * 7168) + attention, rel=1e-12)


def test_recomputation_costs() -> None:
    spec = load_model("llama-70b")
    c = count_params(spec)
    base = flops_per_token(c, spec.architecture, 4096)
    full = flops_per_token(c, spec.architecture, 4096, "full")
    selective = flops_per_token(c, spec.architecture, 4096, "selective", flash=False)
    assert full.model == base.model  # model FLOPs never count recomputation
    assert full.recompute == pytest.approx(base.forward - 2 * c.lm_head)
    assert selective.recompute == pytest.approx(2 * 80 * 64 * 256 * 4096)
    # FlashAttention's backward recomputes the scores inside its kernel: selective adds nothing on top
    assert flops_per_token(c, spec.architecture, 4096, "selective", flash=True).recompute == 0
