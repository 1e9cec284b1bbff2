"""One way to read the model's internals (``transformer.core.recording``): a recording changes
nothing, every documented point is there, a replaced point changes the pass exactly as a head
mask would, and a recording belongs to the thread that made it."""

from __future__ import annotations

import threading

import pytest
import torch

from transformer.core.recording import Recording, recording

KINDS = ("encoder", "decoder_self", "cross")
ATTENTION_POINTS = ("residual", "query_in", "k", "v", "mask", "head_mask", "weights", "heads", "output")
FFN_POINTS = ("residual", "out", "output")


def batch(translator):
    src = torch.tensor([translator.encode_source("The black cat sleeps.").ids])  # (1, S)
    tgt = torch.tensor([[translator.cfg.tgt_sos_id, 5, 6, 7]])  # (1, T)
    return src, tgt


@torch.no_grad()
def test_a_recording_changes_nothing_and_sees_every_point(translator):
    model = translator.model
    src, tgt = batch(translator)
    plain = model(src, tgt, need_weights=True)
    rec = Recording(keep=["*"])
    with recording(rec):
        recorded = model(src, tgt, need_weights=True)
    assert torch.equal(plain.logits, recorded.logits)
    L_enc, L_dec = len(model.encoder_layers), len(model.decoder_layers)
    want = {"source.input", "target.input"}
    for kind, n in (("encoder", L_enc), ("decoder_self", L_dec), ("cross", L_dec)):
        want |= {f"{kind}.{l}.{what}" for l in range(n) for what in ATTENTION_POINTS}
    for kind, n in (("encoder_ffn", L_enc), ("decoder_ffn", L_dec)):
        want |= {f"{kind}.{l}.{what}" for l in range(n) for what in FFN_POINTS}
    assert rec.seen == want
    # the weights read are the ones the model returns; rows are queries, columns keys
    assert torch.equal(rec["cross.1.weights"], recorded.cross_attn[1])
    assert rec["cross.0.weights"].shape == (1, model.cfg.h, tgt.shape[1], src.shape[1])


@torch.no_grad()
def test_replacing_a_head_s_output_with_zeros_is_the_knock_out(translator):
    """Patching a point is exact: zeroing head 2 of cross layer 1 through the recording gives
    the logits of the head mask that silences it."""
    model = translator.model
    src, tgt = batch(translator)
    mask = torch.ones(len(model.decoder_layers), model.cfg.h)
    mask[1, 2] = 0.0
    knocked = model(src, tgt, head_mask={"cross": mask}).logits

    def zero_head(heads):
        heads = heads.clone()
        heads[:, 2] = 0.0
        return heads

    with recording(Recording(replace={"cross.1.heads": zero_head})):
        patched = model(src, tgt).logits
    assert torch.equal(patched, knocked)
    assert not torch.equal(patched, model(src, tgt).logits)


@torch.no_grad()
def test_an_attention_input_can_be_replaced(translator):
    """Zeroing every value of cross layer 0 empties what its heads read: their outputs are 0."""
    model = translator.model
    src, tgt = batch(translator)
    rec = Recording(keep=["cross.0.heads"], replace={"cross.0.v": torch.zeros_like})
    with recording(rec):
        changed = model(src, tgt).logits
    assert torch.count_nonzero(rec["cross.0.heads"]) == 0
    assert not torch.equal(changed, model(src, tgt).logits)


@torch.no_grad()
def test_a_recording_belongs_to_its_thread(translator):
    """A server's other requests run through the same modules at the same time: they must
    neither fill this thread's recording nor be patched by it."""
    model = translator.model
    src, tgt = batch(translator)
    plain = model(src, tgt).logits
    rec = Recording(keep=["*"], replace={"cross.0.heads": torch.zeros_like})
    other: dict = {}
    inside, done = threading.Event(), threading.Event()

    def elsewhere():
        inside.wait()
        other["logits"] = model(src, tgt).logits
        done.set()

    thread = threading.Thread(target=elsewhere)
    thread.start()
    with recording(rec):
        inside.set()
        done.wait(30)
        mine = model(src, tgt).logits
    thread.join()
    assert torch.equal(other["logits"], plain) and not torch.equal(mine, plain)
    assert len(rec.seen) > 0


def test_reading_a_point_that_was_not_kept_says_so():
    rec = Recording(keep=["cross.*.weights"])
    with pytest.raises(KeyError, match="'encoder.0.v' was not recorded"):
        rec["encoder.0.v"]
