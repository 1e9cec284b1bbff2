import math
import re

import pytest
import torch

from transformer.core.config import TransformerConfig
from transformer.core.model import Dropout, LayerNorm, build_model, causal_mask, dropout, sinusoidal_table
from tests.helpers import ROOT

PKG = ROOT / "transformer"


def small_cfg(**kw) -> TransformerConfig:
    base = dict(
        d_model=32,
        h=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        src_vocab_size=50,
        tgt_vocab_size=60,
        max_positions=32,
        tie_embeddings="none",
    )
    base.update(kw)
    return TransformerConfig(**base)


def batch(cfg, B=3, S=7, T=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, cfg.src_vocab_size, (B, S), generator=g)
    tgt = torch.randint(4, cfg.tgt_vocab_size, (B, T), generator=g)
    src[:, 0], tgt[:, 0] = cfg.src_sos_id, cfg.tgt_sos_id
    src[1, 5:] = cfg.src_pad_id  # a padded source
    tgt[2, 4:] = cfg.tgt_pad_id  # a padded target
    return src, tgt


def test_layer_norm_matches_formula():
    torch.manual_seed(0)
    ln = LayerNorm(16, eps=1e-6)
    with torch.no_grad():
        ln.gain.uniform_(0.5, 1.5)
        ln.bias.uniform_(-1, 1)
    x = torch.randn(4, 5, 16)
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    expected = (x - mean) / torch.sqrt(var + 1e-6) * ln.gain + ln.bias
    torch.testing.assert_close(ln(x), expected, rtol=1e-5, atol=1e-5)


def test_sinusoidal_table_values():
    pe = sinusoidal_table(50, 16)
    pos, i = 7, 3
    angle = pos / (10000 ** (2 * i / 16))
    assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
    assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    model = build_model(small_cfg())
    assert "pos_encoding.pe" not in model.state_dict()  # a non-persistent buffer, rebuilt from the config
    torch.testing.assert_close(model.pos_encoding.pe, sinusoidal_table(32, 32))


def test_embedding_is_scaled_by_sqrt_d_model():
    model = build_model(small_cfg())
    ids = torch.tensor([[5, 6]])
    torch.testing.assert_close(model.src_embed(ids), model.src_embed.weight[ids] * math.sqrt(32))


def test_xavier_uniform_init_bounds():
    model = build_model(small_cfg())
    w = model.encoder_layers[0].ffn.linear1.weight  # (d_ff, d_model)
    bound = math.sqrt(6 / (64 + 32))
    assert w.abs().max() <= bound + 1e-6
    assert w.abs().max() > 0.8 * bound
    assert torch.count_nonzero(model.encoder_layers[0].ffn.linear1.bias) == 0


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("tie", ["none", "decoder"])
def test_fused_and_explicit_attention_agree(norm, tie):
    cfg = small_cfg(norm_placement=norm, tie_embeddings=tie)
    torch.manual_seed(0)
    model = build_model(cfg).eval()
    src, tgt = batch(cfg)
    fused = model(src, tgt, need_weights=False)
    explicit = model(src, tgt, need_weights=True)
    assert fused.encoder_attn == [] and fused.cross_attn == []
    torch.testing.assert_close(fused.logits, explicit.logits, rtol=1e-5, atol=1e-5)
    assert len(explicit.encoder_attn) == 2 and explicit.cross_attn[0].shape == (3, 4, 6, 7)


def test_decoder_is_causal():
    cfg = small_cfg()
    torch.manual_seed(0)
    model = build_model(cfg).eval()
    src, tgt = batch(cfg)
    tgt[2] = tgt[0]  # no padding in this test
    changed = tgt.clone()
    changed[:, 4:] = 9
    a, b = model(src, tgt).logits, model(src, changed).logits
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_attention_masks_give_exact_zeros_and_rows_sum_to_one():
    cfg = small_cfg()
    torch.manual_seed(0)
    model = build_model(cfg).eval()
    src, tgt = batch(cfg)
    out = model(src, tgt, need_weights=True)
    for w in out.encoder_attn + out.cross_attn:
        assert torch.all(w[1, :, :, 5:] == 0)  # padded source keys
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    for w in out.decoder_self_attn:
        future = ~causal_mask(6)
        assert torch.all(w[:, :, future] == 0)
        assert torch.all(w[2, :, :, 4:][:, :4] == 0)  # padded target keys, seen from real queries
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))


def test_weights_are_not_stored_on_modules():
    cfg = small_cfg()
    model = build_model(cfg).eval()
    before = {name: set(vars(m)) for name, m in model.named_modules()}
    src, tgt = batch(cfg)
    model(src, tgt, need_weights=True)
    after = {name: set(vars(m)) for name, m in model.named_modules()}
    assert before == after


def test_tied_embeddings_share_one_matrix():
    cfg = small_cfg(tie_embeddings="all", tgt_vocab_size=50)
    model = build_model(cfg)
    assert model.src_embed.weight is model.tgt_embed.weight and model.proj is None
    with pytest.raises(ValueError, match="joint vocabulary"):
        small_cfg(tie_embeddings="all")


def test_config_round_trips_through_json(tmp_path):
    cfg = small_cfg(norm_placement="post", dropout=0.3)
    cfg.to_json(tmp_path / "config.json")
    assert TransformerConfig.from_json(tmp_path / "config.json") == cfg
    with pytest.raises(ValueError, match="divisible"):
        small_cfg(h=5)


def test_no_torch_transformer_modules_and_no_magic_mask_constant():
    banned = (
        torch.nn.Transformer,
        torch.nn.TransformerEncoder,
        torch.nn.TransformerDecoder,
        torch.nn.TransformerEncoderLayer,
        torch.nn.TransformerDecoderLayer,
        torch.nn.MultiheadAttention,
    )
    model = build_model(small_cfg())
    assert not [name for name, m in model.named_modules() if isinstance(m, banned)]
    source = "\n".join(p.read_text() for p in PKG.glob("*.py"))
    assert not re.search(r"-\s*1e\+?9\b", source)


def test_fast_dropout_drops_at_rate_p_and_keeps_the_mean():
    """The CPU mask reads four 16-bit uniforms from each 64-bit draw; every one of the four
    lanes must drop at rate p, and the survivors are scaled so the expectation is kept."""
    torch.manual_seed(0)
    p = 0.2
    x = torch.ones(1000, 1024)
    y = dropout(x, p, training=True)
    dropped = y == 0
    assert torch.unique(y).tolist() == [0.0, pytest.approx(1 / (1 - p), rel=1e-4)]  # p rounded to k/65536
    lanes = dropped.reshape(-1, 4).float().mean(0)  # one rate per int16 lane of the int64 draws
    sigma = math.sqrt(p * (1 - p) / (x.numel() / 4))
    assert torch.all((lanes - p).abs() < 5 * sigma), lanes
    assert abs(y.mean().item() - 1.0) < 5 * math.sqrt(p / (1 - p) / x.numel())
    # neighbours are independent: a pair is dropped together at rate p^2
    both = (dropped[:, :-1] & dropped[:, 1:]).float().mean().item()
    assert abs(both - p * p) < 5 * math.sqrt(p * p * (1 - p * p) / dropped[:, 1:].numel())


def test_fast_dropout_is_seeded_identity_in_eval_and_passes_the_mask_to_the_gradient():
    x = torch.randn(7, 13, requires_grad=True)
    torch.manual_seed(3)
    a = dropout(x, 0.3, training=True)
    torch.manual_seed(3)
    b = dropout(x, 0.3, training=True)
    assert torch.equal(a, b)
    assert dropout(x, 0.3, training=False) is x and dropout(x, 0.0, training=True) is x
    assert torch.equal(dropout(x, 1.0, training=True), torch.zeros_like(x))
    assert torch.equal(dropout(x, 1 - 1e-6, training=True), torch.zeros_like(x))  # rounds to "drop all"
    assert dropout(torch.ones(100), 1e-6, training=True).shape == (100,)  # rounds to "drop none"
    with pytest.raises(ValueError):  # outside [0, 1]: F.dropout's own error, not a scaled mask
        dropout(x, 1.5, training=True)
    a.sum().backward()
    keep = (a != 0).float() / 0.7  # d(sum)/dx is the scaled mask
    assert torch.allclose(x.grad, keep)
    assert dropout(torch.ones(0, 5), 0.5, training=True).shape == (0, 5)


def test_model_uses_the_fast_dropout_everywhere():
    model = build_model(small_cfg())
    kinds = {type(m) for m in model.modules() if isinstance(m, torch.nn.Dropout)}
    assert kinds == {Dropout}
