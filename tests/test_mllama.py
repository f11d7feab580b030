"""Llama 3.2 Vision's text model (model_type mllama, text_config mllama_text_model): Llama 3.1's layers with
cross-attention layers over the image states inserted, which MllamaTextModel.forward skips whole when a batch has no
image (modeling_mllama.py, transformers 5.25.0). dpcost counts their weights (held, trained, reduced) and costs
text-only batches, so they add no FLOPs, activations, KV cache or decode reads. Meta built the 11B on Llama 3.1 8B
(model card: "built on top of Llama 3.1 text-only model"): the text path must be that model, plus embed_tokens' 8
more rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from dpcost.catalog import load_model
from dpcost.engine.activations import kv_cache_bytes, layer_tensors
from dpcost.engine.compute import flops_per_token
from dpcost.engine.params import count_params
from dpcost.engine.serving import decode_weight_bytes

CONFIGS = Path(__file__).parent / "reference" / "hf-configs"
VISION = CONFIGS / "llama-3.2-11b-vision.json"


def _both():  # type: ignore[no-untyped-def]
    vision, text = load_model(str(VISION)), load_model(str(CONFIGS / "llama-3.1-8b.json"))
    assert vision.architecture is not None and text.architecture is not None
    return vision, text


def test_the_text_path_is_llama_3_1_8b_and_eight_more_embedding_rows() -> None:
    vision, text = _both()
    v, t = count_params(vision), count_params(text)
    assert v.active == t.total + 8 * 4096
    assert v.active_excl_embedding == t.active_excl_embedding
    assert v.total == 9_775_192_080 and v.idle == v.total - v.active  # transformers 5.25.0's MllamaForCausalLM


def test_a_cross_attention_layer_holds_its_projections_norms_gates_and_mlp() -> None:
    """MllamaCrossAttentionDecoderLayer: q/o (4096 x 4096), k/v (4096 x 1024), q_norm and k_norm (128 each), two
    gates of one number, input and post-attention norms (4096 each) and a SwiGLU MLP of 14,336."""
    vision, _ = _both()
    counts = count_params(vision)
    cross = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 128 + 2 + 2 * 4096 + 3 * 4096 * 14336
    assert [b.params for b, (mixer, *_) in zip(counts.blocks, vision.architecture.layer_kinds, strict=True)
            if mixer == "cross"] == [cross] * 8  # fmt: skip
    assert counts.idle == 8 * cross


def test_text_only_batches_cost_what_llama_3_1_8b_costs() -> None:
    """The same FLOPs per token, the same activations per layer run, the same KV cache and decode weight reads."""
    vision, text = _both()
    va, ta = vision.architecture, text.architecture
    assert va is not None and ta is not None
    for recompute in ("none", "full"):
        ours = flops_per_token(count_params(vision), va, 4096, recompute)
        assert ours == flops_per_token(count_params(text), ta, 4096, recompute)
    assert layer_tensors(va, False, mixer="cross").saved_bytes(4096, 1) == 0
    assert layer_tensors(va, False, mixer="cross").hidden == 0
    assert kv_cache_bytes(va, 4096, 1) == kv_cache_bytes(ta, 4096, 1)
    assert decode_weight_bytes(count_params(vision), va, 8) == decode_weight_bytes(count_params(text), ta, 8)


def test_its_weights_and_their_states_are_held_whole() -> None:
    """Weights, gradients and optimizer states cover every weight, the idle ones too: the ZeRO paper's 2 + 2 + 12
    bytes a parameter at stage 0."""
    code, out, _ = run_cli("estimate", "--model", str(VISION), "--dp", "8", "--zero", "0", "--format", "json")
    assert code == 0
    stage = json.loads(out)["memory"]["stages"][0]
    held = (stage["params_bytes"], stage["grads_bytes"], stage["optimizer_bytes"])
    assert held == (2 * 9_775_192_080, 2 * 9_775_192_080, 12 * 9_775_192_080)


def test_the_estimate_says_what_a_text_only_batch_leaves_out() -> None:
    code, out, _ = run_cli("estimate", "--model", str(VISION), "--dp", "8", "--format", "json")
    advice = {w["code"]: w["message"] for w in json.loads(out)["warnings"]}
    assert code == 0 and advice["text-only-batches"].startswith("the 8 cross-attention layers (1.74B parameters)")
    code, out, _ = run_cli("estimate", "--model", str(CONFIGS / "llama-3.1-8b.json"), "--dp", "8", "--format", "json")
    assert code == 0 and "text-only-batches" not in {w["code"] for w in json.loads(out)["warnings"]}


def test_layouts_are_refused_by_what_they_lack() -> None:
    code, _, err = run_cli("estimate", "--model", str(VISION), "--dp", "8", "--tp", "2")
    assert code == 2 and "cross-attention layers over image states" in err, err


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("tie_word_embeddings", True, "text_config.tie_word_embeddings: true would tie lm_head (128256 rows)"),
        ("cross_attention_layers", [3, -1], "text_config.cross_attention_layers: layer indices from 0"),
        ("cross_attention_layers", "3", "text_config.cross_attention_layers: expected a list of layer indices"),
    ],
)
def test_what_it_cannot_count_is_refused_by_key(tmp_path: Path, key: str, value: object, said: str) -> None:
    cfg = json.loads(VISION.read_text())
    cfg["text_config"][key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, _, err = run_cli("estimate", "--model", str(path), "--dp", "8")
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_cross_attention_layers_are_the_listed_indices_that_name_a_layer(tmp_path: Path) -> None:
    """MllamaTextModel builds layer i as a cross-attention layer where i is listed: an index past the last layer names
    none, and without the key MllamaTextConfig lists the 11B's eight, whatever the depth."""
    cfg = json.loads(VISION.read_text())
    cfg["text_config"]["cross_attention_layers"] = [3, 8, 13, 18, 23, 28, 33, 38, 40, 99]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert count_params(load_model(str(path))).total == 9_775_192_080
    del cfg["text_config"]["cross_attention_layers"]
    cfg["text_config"]["num_hidden_layers"] = 50
    path.write_text(json.dumps(cfg))
    a = load_model(str(path)).architecture
    assert a is not None and [i for i, m in enumerate(a.mixers) if m == "cross"] == [3, 8, 13, 18, 23, 28, 33, 38]
