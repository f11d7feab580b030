"""BERT and the encoders built like it (bert, roberta, xlm-roberta, camembert, data2vec-text, ernie,
roberta-prelayernorm, xlm-roberta-xl, megatron-bert, bert-generation; their modeling_*.py, transformers 5.25.0).
Their counts are held to what each ForCausalLM class builds (resolved/transformers-5.25.json, test_hf_configs.py:
each class's defaults and the released shapes of bert-large-uncased, roberta-base, roberta-large, xlm-roberta-large
and camembert-base); here what their papers and classes say beyond the count."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.ops import layer_ops
from dpcost.engine.params import count_params

BERT_BASE, _, BERT_DECODER = transformers_cases("bert")
_, ROBERTA_BASE, ROBERTA_LARGE = transformers_cases("roberta")
_, ERNIE_TASKS = transformers_cases("ernie")


@pytest.mark.parametrize(
    ("cfg", "millions"),
    [(BERT_BASE, 110), (ROBERTA_BASE, 125), (ROBERTA_LARGE, 355)],
)
def test_the_papers_sizes(tmp_path: Path, cfg: dict, millions: int) -> None:  # type: ignore[type-arg]
    """BERT-base 110M (Devlin et al. 2019, section 3); RoBERTa-base 125M and -large 355M (fairseq's RoBERTa
    README). BERT-large's 340M and XLM-R large's 550M (Conneau et al. 2020, table 7) are rounder than their
    classes' counts (335M, 560M), which the harness holds."""
    assert round(count_params(spec_from_config(tmp_path, cfg)).total / 1e6) == millions


def test_the_tables_beside_the_embedding_are_lookups(tmp_path: Path) -> None:
    """BertEmbeddings adds a position table (512 x 768) and a segment table (2 x 768) to the token embedding: no
    token multiplies them, so active parameters without the lookup tables leave all three out."""
    c = count_params(spec_from_config(tmp_path, BERT_BASE))
    parts = dict(c.components)
    assert (parts["position table"], parts["token-type tables"]) == (512 * 768, 2 * 768)
    assert c.active_excl_embedding == c.total - (30_522 + 512 + 2) * 768


def test_ernie_s_task_type_table_joins_the_segment_tables(tmp_path: Path) -> None:
    """ErnieEmbeddings holds task_type_embeddings (task_type_vocab_size x hidden) beside the token types only with
    use_task_id (modeling_ernie.py)."""
    assert ERNIE_TASKS["use_task_id"] and ERNIE_TASKS["task_type_vocab_size"] == 5
    parts = dict(count_params(spec_from_config(tmp_path, ERNIE_TASKS)).components)
    assert parts["token-type tables"] == (ERNIE_TASKS["type_vocab_size"] + 5) * ERNIE_TASKS["hidden_size"]


def test_an_encoder_s_attention_sees_every_key(tmp_path: Path) -> None:
    """Without is_decoder, BertSelfAttention runs under a bidirectional mask (create_bidirectional_mask): flash
    attention computes the whole T x T square, 2 x T x T x heads x (d_qk + d_v) forward per sequence, twice the
    causal half a decoder of the same shapes computes (FlashAttention-2's count, Dao 2023)."""
    seq = 512
    encoder = spec_from_config(tmp_path, BERT_BASE).architecture
    decoder = spec_from_config(tmp_path, {**BERT_BASE, "is_decoder": True}).architecture
    assert encoder is not None and decoder is not None and encoder.bidirectional and not decoder.bidirectional

    def attention(a: object) -> float:
        (op,) = [o for o in layer_ops(a, False, seq, seq, "fused") if o.kind == "attention"]  # type: ignore[arg-type]
        return op.flops

    assert attention(encoder) == 2.0 * seq * seq * 12 * (64 + 64)
    assert attention(encoder) == 2 * attention(decoder)


def test_an_encoder_is_not_served_token_by_token(tmp_path: Path) -> None:
    """An encoder generates no tokens: inference (a decode step's cost) is refused for it, and costed for the same
    shapes as a decoder (is_decoder true, BERT_DECODER)."""
    said = estimate_refusal(tmp_path, BERT_BASE, "--mode", "inference")
    assert "--mode" in said and "encoder" in said
    assert BERT_DECODER["is_decoder"] and not spec_from_config(tmp_path, BERT_DECODER).architecture.bidirectional  # type: ignore[union-attr]


def test_the_untied_head_holds_one_bias(tmp_path: Path) -> None:
    """Untied, BertLMPredictionHead's own `bias` is no longer decoder.bias (_tied_weights_keys ties them only with
    the embedding), and forward reads decoder.bias: transformers builds a bias more than the model uses, which the
    harness records as unused. dpcost counts the one forward reads."""
    assert not BERT_DECODER["tie_word_embeddings"]
    c = count_params(spec_from_config(tmp_path, BERT_DECODER))
    assert c.lm_head == BERT_DECODER["vocab_size"] * (BERT_DECODER["hidden_size"] + 1)


def test_cross_attention_is_refused_in_one_line(tmp_path: Path) -> None:
    """add_cross_attention builds a cross-attention block in every layer of a decoder (BertLayer), which dpcost does
    not count."""
    said = estimate_refusal(tmp_path, {**BERT_BASE, "add_cross_attention": True})
    assert "add_cross_attention: true adds cross-attention" in said


DISTILBERT, DISTILBERT_SMALL = transformers_cases("distilbert")
MPNET_DEFAULTS, MPNET_BASE, MPNET_SMALL = transformers_cases("mpnet")


def test_distilbert_s_own_key_names_and_its_paper_s_size(tmp_path: Path) -> None:
    """DistilBertConfig's files write dim, n_layers, n_heads, hidden_dim and activation. Its encoder, without the
    masked-LM head (vocab_transform, vocab_layer_norm and vocab_projector's bias), holds the 66M of Sanh et al. 2019
    (table 3)."""
    assert {"dim", "n_layers", "n_heads", "hidden_dim", "activation"} <= set(DISTILBERT_SMALL)
    a = spec_from_config(tmp_path, DISTILBERT_SMALL).architecture
    assert a is not None
    shapes = (a.hidden, a.layers, a.heads, a.ffn, a.mlp, a.token_types)
    assert shapes == (256, 3, 4, 512, "relu", 0)
    c = count_params(spec_from_config(tmp_path, DISTILBERT))
    head = 768 * 768 + 768 + 2 * 768 + 30_522
    assert round((c.total - head) / 1e6) == 66


def test_mpnet_s_relative_biases_are_held_once(tmp_path: Path) -> None:
    """MPNetEncoder holds one relative_attention_bias, relative_attention_num_buckets x heads (32 x 12), which every
    layer's scores add (modeling_mpnet.py); mpnet-base's 110M. Its attention buckets distances into 32 whatever
    the table holds (relative_position_bucket), so a smaller table is refused."""
    parts = dict(count_params(spec_from_config(tmp_path, MPNET_BASE)).components)
    assert parts["relative position biases"] == 32 * 12
    small = dict(count_params(spec_from_config(tmp_path, MPNET_SMALL)).components)
    assert small["relative position biases"] == 48 * 4  # rows past the 32 its attention reads are held too
    said = estimate_refusal(tmp_path, {**MPNET_SMALL, "relative_attention_num_buckets": 16})
    assert "relative_attention_num_buckets: 32 or more" in said
    assert round(count_params(spec_from_config(tmp_path, MPNET_BASE)).total / 1e6) == 110


@pytest.mark.parametrize(("cfg", "longest"), [(ROBERTA_BASE, 512), (BERT_BASE, 512), (MPNET_BASE, 512)])
def test_the_longest_sequence_the_position_table_serves(tmp_path: Path, cfg: dict, longest: int) -> None:  # type: ignore[type-arg]
    """RoBERTa's and MPNet's embeddings number positions from padding_idx + 1 (create_position_ids_from_input_ids,
    pad_token_id 1): their 514 rows serve 512 tokens, as BERT's 512 rows do from 0. A longer --seq-len is refused."""
    spec = spec_from_config(tmp_path, cfg)
    a = spec.architecture
    assert a is not None and a.learned_positions - a.position_offset == longest
    assert "use <= 512" in estimate_refusal(tmp_path, cfg, "--seq-len", "513")


def test_the_training_forward_s_dropout_is_the_file_s(tmp_path: Path) -> None:
    """BERT-style layers drop out the hidden state before each residual add and the attention probabilities at
    hidden_dropout_prob (BertSelfOutput, BertOutput, BertSelfAttention; 0.1 in the class and the released files);
    each dropout keeps a 1-byte mask per element: 2h per token a layer; without flash attention also the
    probabilities' mask and the dropped probabilities, which the product with V reads in its backward (the softmax's
    own output stays kept for the softmax's backward): 3 bytes a score, heads x s per token."""
    from dpcost.engine.checkpointing import activation_memory

    base = spec_from_config(tmp_path, BERT_BASE).architecture
    off = spec_from_config(tmp_path, {**BERT_BASE, "hidden_dropout_prob": 0.0}).architecture
    assert base is not None and off is not None and (base.dropout, off.dropout) == (0.1, 0.0)
    seq = 128
    for flash, mask in ((True, 2 * 768), (False, 2 * 768 + 3 * 12 * seq)):
        with_masks = activation_memory(base, seq, 1, flash=flash).kept
        without = activation_memory(off, seq, 1, flash=flash).kept
        assert with_masks - without == 12 * seq * mask  # 12 layers


def test_what_the_head_and_the_embedding_norm_keep(tmp_path: Path) -> None:
    """Outside the layers a post-norm encoder keeps the embedding LayerNorm's input and its dropout mask, no final
    norm's input, and in its prediction head the dense layer's input, the activation's input, the LayerNorm's input
    and the output projection's: 5 bf16 hidden-wide tensors and a 1-byte mask per token, beside the logits."""
    from dpcost.engine.loss import PATHS, loss_memory

    a = spec_from_config(tmp_path, BERT_BASE).architecture
    assert a is not None
    kept = loss_memory(a, 512, 1).kept
    assert kept == 512 * (5 * 2 * 768 + 768) + PATHS["upcast"].kept * 512 * 30_522


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"pad_token_id": 30_522}, "pad_token_id: a row of the embedding, 0 to 30521, got 30522"),
        ({"type_vocab_size": 0}, "type_vocab_size: a table of 1 row or more"),
        ({"max_position_embeddings": 0}, "max_position_embeddings: 1 or more, got 0"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob: a probability from 0 to below 1, got 1.5"),
    ],
)
def test_what_transformers_cannot_run_is_refused_in_one_line(tmp_path: Path, change: dict, said: str) -> None:  # type: ignore[type-arg]
    """nn.Embedding asserts padding_idx is one of its rows; an empty segment or position table builds but every
    forward indexes row 0; a dropout probability must be below 1."""
    assert said in estimate_refusal(tmp_path, {**BERT_BASE, **change})


def test_roberta_s_table_must_reach_past_its_padding(tmp_path: Path) -> None:
    """With pad_token_id 1 the first position is row 2: a table of 2 rows serves no token."""
    said = estimate_refusal(tmp_path, {**ROBERTA_BASE, "max_position_embeddings": 2})
    assert "max_position_embeddings: more than the 2 rows before the first position (pad_token_id + 1), got 2" in said


MODERNBERT, MODERNBERT_SMALL = transformers_cases("modernbert")


@pytest.mark.parametrize(("seq", "half"), [(1, 4), (5, 4), (9, 4), (100, 4), (513, 64), (4096, 64)])
def test_an_encoder_s_window_keys_are_those_its_mask_keeps(seq: int, half: int) -> None:
    """sliding_window_bidirectional_overlay keeps key j for query i where |i - j| <= w (masking_utils.py,
    transformers 5.25.0): the average over queries of the keys it keeps, counted pair by pair."""
    from dpcost.engine.attention_keys import bidirectional_keys
    from dpcost.specs import LocalAttentionSpec

    kept = sum(min(i, half) + min(seq - 1 - i, half) + 1 for i in range(seq))
    assert bidirectional_keys(seq, LocalAttentionSpec(size=half)) == pytest.approx(kept / seq, rel=1e-12)
    assert bidirectional_keys(seq, None) == seq


def test_modernbert_is_its_decoder_s_layers_attending_both_ways(tmp_path: Path) -> None:
    """ModernBertForMaskedLM holds what ModernBertDecoderForCausalLM holds for the same shapes (149,655,232 for
    both classes' defaults, the base model's), and its sliding layers' flash attention computes the keys within
    local_attention // 2 = 64 on either side: 129 a query away from the ends of an 8,192-token sequence."""
    encoder = spec_from_config(tmp_path, MODERNBERT)
    decoder = spec_from_config(tmp_path, {**MODERNBERT, "model_type": "modernbert-decoder"})
    assert count_params(encoder).total == count_params(decoder).total == 149_655_232
    a = encoder.architecture
    assert a is not None and a.bidirectional and a.local_attention is not None and a.local_attention.size == 64
    seq = 8192
    (op,) = [o for o in layer_ops(a, False, seq, seq, "fused", local=a.local_attention) if o.kind == "attention"]
    keys = 129 - 64 * 65 / seq  # the 64 queries at each end miss 64, 63, ..., 1 keys
    assert op.flops == pytest.approx(2.0 * seq * keys * 12 * (64 + 64), rel=1e-12)
    assert "encoder" in estimate_refusal(tmp_path, MODERNBERT, "--mode", "inference")


ESM2_650M, ESM1B_650M, _ = transformers_cases("esm")


def test_esm_s_two_generations(tmp_path: Path) -> None:
    """ESM-2 650M (Lin et al. 2023: rotary positions, no embedding norm) holds 651,043,254 of its name's 650M;
    ESM-1b (Rives et al. 2021: a learned table of 1,026 rows after the padding row, an embedding norm) 652,359,094.
    The contact head, 33 layers x 20 heads and a bias, is held but not run by masked-LM training."""
    esm2 = count_params(spec_from_config(tmp_path, ESM2_650M))
    assert esm2.total == 651_043_254 and dict(esm2.components)["contact prediction head"] == 33 * 20 + 1
    assert esm2.idle == 661 and esm2.active == esm2.total - 661
    a = spec_from_config(tmp_path, ESM2_650M).architecture
    assert a is not None and a.learned_positions == 0 and a.final_norm and not a.embedding_norm
    b = spec_from_config(tmp_path, ESM1B_650M).architecture
    assert b is not None and b.learned_positions - b.position_offset == 1024 and b.embedding_norm


def test_esmfold_and_other_positions_are_refused(tmp_path: Path) -> None:
    """is_folding_model builds ESMFold's trunk beside the language model; EsmEmbeddings knows absolute and rotary."""
    assert "is_folding_model: true is ESMFold" in estimate_refusal(tmp_path, {**ESM2_650M, "is_folding_model": True})
    said = estimate_refusal(tmp_path, {**ESM2_650M, "position_embedding_type": "relative_key"})
    assert "position_embedding_type: absolute or rotary" in said


ALBERT_XXLARGE, ALBERT_BASE, _, ALBERT_GROUPS = transformers_cases("albert")


def test_albert_s_layers_run_their_group_s_weights(tmp_path: Path) -> None:
    """AlbertTransformer runs group int(i / (num_hidden_layers / num_hidden_groups)) for layer i, its
    inner_group_num layers in turn (modeling_albert.py): 5 layers over 2 groups of 2 run groups 0, 0, 0, 1, 1, so
    the 10 layers run the weights first held by layers 0, 1, 0, 1, 0, 1, 6, 7, 6, 7."""
    a = spec_from_config(tmp_path, ALBERT_GROUPS).architecture
    assert a is not None and a.layer_weights == (0, 1, 0, 1, 0, 1, 6, 7, 6, 7)
    base = spec_from_config(tmp_path, ALBERT_BASE).architecture
    assert base is not None and base.layers == 12 and base.layer_weights == (0,) * 12


def test_albert_holds_one_layer_and_runs_twelve(tmp_path: Path) -> None:
    """ALBERT-base (Lan et al. 2020, table 1: BERT-base's 12 layers of 768 sharing one set of weights, a 128-wide
    embedding): it holds one layer's 7,087,872 weights (four 768 x 768 projections and the 768 x 3072 MLP, biased,
    and two LayerNorms) and a token runs it 12 times; the embedding's tables are 128 wide, projected to 768."""
    layer = 4 * (768 * 768 + 768) + 2 * 768 * 3072 + 3072 + 768 + 2 * 2 * 768
    assert layer == 7_087_872
    c = count_params(spec_from_config(tmp_path, ALBERT_BASE))
    parts = dict(c.components)
    assert parts["attention"] + parts["dense MLP"] == layer - 4 * 768  # the layer's norms are with the others
    assert parts["embedding"] == 30_000 * 128 and parts["embedding projection"] == 128 * 768 + 768
    assert c.active - c.total == 11 * layer  # the other 11 runs of the layer


def test_albert_is_costed_as_pure_data_parallelism(tmp_path: Path) -> None:
    """Megatron-style layouts split layers across stages and shards, which shared weights do not fit: refused."""
    said = estimate_refusal(tmp_path, ALBERT_BASE, "--tp", "2")
    assert "layers sharing their weights" in said and "cost it as pure data parallelism" in said


def test_keys_their_classes_do_not_read(tmp_path: Path) -> None:
    """MPNetEmbeddings' padding row is 1 whatever pad_token_id says (positions from row 2); DistilBertConfig reads
    hidden_dim, not intermediate_size."""
    mpnet = spec_from_config(tmp_path, {**MPNET_BASE, "pad_token_id": 600}).architecture
    assert mpnet is not None and mpnet.learned_positions - mpnet.position_offset == 512
    distil = spec_from_config(tmp_path, {**DISTILBERT_SMALL, "intermediate_size": 100}).architecture
    assert distil is not None and distil.ffn == DISTILBERT_SMALL["hidden_dim"] == 512


def test_modernbert_s_norms_are_layernorms_without_bias(tmp_path: Path) -> None:
    """nn.LayerNorm(bias=norm_bias) (modeling_modernbert.py): a weight per element, and under eager kernels the bf16
    input kept, with no fp32 copy as an eager RMSNorm keeps."""
    from dpcost.engine.loss import loss_memory

    a = spec_from_config(tmp_path, MODERNBERT).architecture
    assert a is not None and (a.norm, a.norm_weights) == ("layernorm_nb", 1)
    assert loss_memory(a, 512, 1, kernels="eager").kept == loss_memory(a, 512, 1, kernels="fused").kept
