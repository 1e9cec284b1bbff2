"""Converted Marian (OPUS-MT) models run exactly as transformers runs them.

Small Marian models are built with transformers (``MarianConfig`` with the switches published
OPUS-MT configs set, see ``tests.helpers.marian_config``), with SentencePiece models trained
on our corpus, trained for a few steps so that they end their sentences, saved with
``save_pretrained``, converted with ``python -m transformer.cli.from_marian``, and compared:

- token ids: ``Translator.encode_source`` == ``MarianTokenizer(text).input_ids``, and text:
  our decoding == ``MarianTokenizer.decode(ids, skip_special_tokens=True)``;
- teacher-forced logits within 1e-4 of ``MarianMTModel``'s, and cross-attention weights
  (rows are queries, columns keys; eval mode) equal to its ``output_attentions`` ones;
- greedy output token-identical to ``generate(num_beams=1)``;
- beam search identical to ``generate(num_beams=k)``;
- training batches: sources framed as Marian's (no start token), the loss MarianMTModel's, and
  ``train.py --init-from`` fine-tunes a converted model.

Where the decoders agree, and where they do not (docs/marian.md says the same):

- both never emit <pad>: OPUS-MT's generation configs set ``bad_words_ids = [[pad]]``, which
  ``generate`` gets here, and the converter copies it into ``tgt_banned_ids``;
- length: ours stops at ``max_new_tokens(model, len(src))`` = min(max_positions, 2 S + 10)
  emitted tokens, ``generate`` at ``max_new_tokens`` (passed the same), but OPUS-MT configs
  also force </s> as the last token (``forced_eos_token_id``), while ours leaves a sentence
  that reaches the limit unfinished: ``forced_eos_token_id=None`` here (the trained models
  end their sentences well before the limit anyway);
- beam scores: ours divides a hypothesis's log-probability by GNMT's ((5 + |Y|) / 6) ** alpha,
  transformers' by |Y| ** length_penalty, so they rank alike only with no length penalty
  (alpha = 0, length_penalty = 0). With ``early_stopping=True`` both stop a sentence at k
  finished hypotheses; with False they differ (ours stops when no alive hypothesis can beat
  the worst finished one, an exact bound; transformers uses a heuristic or runs to the limit).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

from tests.helpers import (
    exit_2,
    marian_config,
    single_thread,
    tatoeba_pairs,
    train_marian,
    train_spm,
    write_marian_tokenizer,
)
from transformer.cli import from_marian
from transformer.core.beam import beam_search
from transformer.core.stepping import frame_source
from transformer.core.config import TransformerConfig
from transformer.core.decoding import greedy_decode, max_new_tokens, never_emitted
from transformer.core.model import sinusoidal_table
from transformer import load_translator

import transformers  # noqa: E402,F401  (the test install brings it: requirements-marian.txt)

# (name, shared vocabulary, MarianConfig switches): every switch published OPUS-MT configs vary
VARIANTS = {
    # what Helsinki-NLP/opus-mt-* set: swish, scaled embeddings, one vocab, tied embeddings
    "opus-mt": (True, {}),
    # share_encoder_decoder_embeddings=False: a target vocabulary of its own (target_vocab.json)
    "separate-vocab": (False, {"share_encoder_decoder_embeddings": False}),
    # relu FFN, and an output projection of its own (tie_word_embeddings=False)
    "relu-untied": (True, {"activation_function": "relu", "tie_word_embeddings": False}),
    # gelu FFN, and embeddings not scaled by sqrt(d_model)
    "gelu-unscaled": (True, {"activation_function": "gelu", "scale_embedding": False}),
}
N_TRAIN = 3000  # corpus pairs the SentencePiece models and the tiny models learn from
N_DECODE = 6  # test sentences decoded greedily and with beams per variant
BEAM = 4

# tiny models: one thread is fastest, and bit-for-bit comparisons need the same kernels every time
# the slow set: small Marian models trained with transformers (about a minute) before any check
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


def _quiet_marian_tokenizer(folder):
    from transformers import MarianTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MarianTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    """{variant: (transformers model, MarianTokenizer, our Translator, Marian folder, our folder)},
    built once: the SentencePiece models are trained once, the base model of each vocabulary
    layout is trained for a few seconds, the other variants start from the shared one's
    weights with their switch changed and train a few steps more."""
    from transformers import MarianMTModel

    root = tmp_path_factory.mktemp("marian")
    pairs = tatoeba_pairs("train", N_TRAIN)
    short = [p for p in pairs if len(p[0]) <= 40]
    with single_thread():
        src_spm = train_spm([en for en, _ in pairs], 400)
        tgt_spm = train_spm([it for _, it in pairs], 500)
        toks = {
            shared: write_marian_tokenizer(root / f"tok-{shared}", src_spm, tgt_spm, separate_vocabs=not shared)
            for shared in (True, False)
        }
        built, base = {}, None
        for name, (shared, switches) in VARIANTS.items():
            tok = toks[shared]
            pad = tok.pad_token_id
            tgt_vocab = tok.encoder if shared else tok.target_encoder
            cfg = marian_config(len(tok.encoder), len(tgt_vocab), pad, **switches)
            torch.manual_seed(0)
            model = MarianMTModel(cfg)
            if shared and base is not None:  # start from the trained shared model
                state = {k: v for k, v in base.state_dict().items() if k in model.state_dict()}
                model.load_state_dict(state, strict=False)
                if not cfg.tie_word_embeddings:
                    model.lm_head.weight.data.copy_(base.model.shared.weight.data)
                steps = 60
            else:
                steps = 100
            model = train_marian(model, tok, short, steps=steps, batch=32, lr=5e-3)
            # how fast so small a model learns to end its sentences depends on the CPU's arithmetic:
            # a few more steps, at a lower rate, until it ends the sentences the tests decode
            for more in range(1, 6):
                if _ends_its_sentences(model, tok):
                    break
                model = train_marian(model, tok, short, steps=100, batch=32, lr=2e-3, seed=more)
            if name == "opus-mt":
                base = model
            folder = root / name
            folder.mkdir()
            model.save_pretrained(folder)
            for f in (root / f"tok-{shared}").iterdir():
                (folder / f.name).write_bytes(f.read_bytes())
            out = root / f"{name}-ours"
            assert from_marian.main([str(folder), "--out", str(out)]) == 0
            model.set_attn_implementation("eager")  # output_attentions needs the explicit softmax
            built[name] = (model.eval(), _quiet_marian_tokenizer(folder), load_translator(out), folder, out)
    return built


def _ends_its_sentences(model, tok) -> bool:
    """transformers' greedy decoding of the test sentences ends all of them but one with </s>."""
    ends = [model.config.eos_token_id in _generate(model, tok, text, 40) for text in _test_sources(N_DECODE)]
    return sum(ends) >= N_DECODE - 1


def _test_sources(n: int) -> list[str]:
    """``n`` test sentences as short as the ones the tiny models learn from (40 characters at
    most), so that a model trained for a few steps ends them on any CPU's arithmetic."""
    return [en for en, _ in tatoeba_pairs("test", 10 * n) if len(en) <= 40][:n]


# ------------------------------------------------------------------------- switches and tables


def test_old_configs_load_with_todays_behaviour():
    """A config.json from before the Marian switches loads, and means what it meant."""
    shipped = json.loads((Path(__file__).parent.parent / "checkpoints/en-it/config.json").read_text())
    cfg = TransformerConfig.from_dict(shipped)
    assert (cfg.activation, cfg.positional_table, cfg.scale_embedding, cfg.final_logits_bias) == (
        "relu",
        "interleaved",
        True,
        False,
    )
    assert cfg.src_sos_id == 2


def test_halves_table_is_marians():
    """Marian's [sin | cos] table, to the bit; ours is interleaved and a different table."""
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    for n, d in ((64, 32), (8, 512)):
        theirs = MarianSinusoidalPositionalEmbedding(n, d).create_weight()
        assert torch.equal(sinusoidal_table(n, d, "halves"), theirs)
        assert not torch.allclose(sinusoidal_table(n, d), theirs)


# ------------------------------------------------------------------------- tokenizers


@pytest.mark.parametrize("name", ["opus-mt", "separate-vocab"])
def test_source_ids_match_marian_tokenizer(marian, name):
    """Our encode path gives MarianTokenizer's input_ids (pieces then </s>, no start token)."""
    _, tok, tr, _, _ = marian[name]
    odd = ["  Two   spaces  ", "Naïve café, «quoted»\ttab", "ÉLAN Ωmega ½", "emoji 😀 here", "x\u200by"]
    odd.append("ｆｕｌｌ width")
    for text in _test_sources(300) + odd:
        assert tr.encode_source(text).ids == tok(text).input_ids, text


@pytest.mark.parametrize("name", ["opus-mt", "separate-vocab"])
def test_decoding_matches_marian_tokenizer(marian, name):
    """Text from ids as MarianTokenizer.decode(skip_special_tokens=True) gives it, for the
    target sentences' ids and for random outputs (pieces of either language, </s>, <unk>):
    any ids but those no decoder emits. (With separate vocabularies MarianTokenizer takes
    its specials' ids from the source vocabulary, so it would print the target's <pad> as
    text and drop the target piece at the source's pad id: ours drops both.)"""
    _, tok, tr, _, _ = marian[name]
    g = torch.Generator().manual_seed(0)
    emitted = [i for i in range(tr.cfg.tgt_vocab_size) if i not in never_emitted(tr.cfg)]
    cases = [tok(text_target=it).input_ids for _, it in tatoeba_pairs("test", 200)]
    cases += [[emitted[i] for i in torch.randint(len(emitted), (10,), generator=g)] for _ in range(200)]
    for ids in cases:
        assert tr._decode_text(ids) == tok.decode(ids, skip_special_tokens=True), tok.convert_ids_to_tokens(ids)


# ------------------------------------------------------------------------- the model


def _batch(tok, texts, targets):
    x = tok(texts, text_target=targets, return_tensors="pt", padding=True)
    pad = tok.pad_token_id
    labels = x["labels"]
    dec_in = torch.cat([torch.full((len(texts), 1), pad), labels[:, :-1]], dim=1)  # pad = the start token
    return x["input_ids"], x["attention_mask"], dec_in, labels != pad


@pytest.mark.parametrize("name", list(VARIANTS))
def test_teacher_forced_logits_and_cross_attention(marian, name):
    """Same inputs, same logits (within 1e-4) and the same cross-attention weights, on a padded
    batch; only positions of real target tokens are compared (ours masks padded decoder
    inputs as keys, transformers does not, so their outputs differ there and nowhere else)."""
    model, tok, tr, _, _ = marian[name]
    pairs = tatoeba_pairs("test", 8)
    src, mask, dec_in, real = _batch(tok, [en for en, _ in pairs], [it for _, it in pairs])
    with torch.no_grad():
        theirs = model(input_ids=src, attention_mask=mask, decoder_input_ids=dec_in, output_attentions=True)
        ours = tr.model(src, dec_in, need_weights=True)
    assert ours.logits.shape == theirs.logits.shape
    torch.testing.assert_close(ours.logits[real], theirs.logits[real], atol=1e-4, rtol=0)
    S = mask.sum(1)
    for ours_w, theirs_w in zip(ours.cross_attn, theirs.cross_attentions):  # per layer (B, H, T, S)
        assert ours_w.shape == theirs_w.shape
        for b in range(len(pairs)):
            rows = real[b]
            torch.testing.assert_close(ours_w[b, :, rows, : S[b]], theirs_w[b, :, rows, : S[b]], atol=1e-5, rtol=0)
    for ours_w, theirs_w in zip(ours.encoder_attn, theirs.encoder_attentions):
        for b in range(len(pairs)):
            torch.testing.assert_close(ours_w[b, :, : S[b], : S[b]], theirs_w[b, :, : S[b], : S[b]], atol=1e-5, rtol=0)


def _generate(model, tok, text: str, limit: int, **settings) -> list[int]:
    """transformers' output ids for one sentence, without the start token and the padding
    after </s>."""
    x = tok([text], return_tensors="pt")
    pad = tok.pad_token_id
    with torch.no_grad():
        out = model.generate(
            **x, max_new_tokens=limit, bad_words_ids=[[pad]], forced_eos_token_id=None, do_sample=False, **settings
        )[0].tolist()
    ids = out[1:]
    if model.config.eos_token_id in ids:
        ids = ids[: ids.index(model.config.eos_token_id) + 1]
    return ids


@pytest.mark.parametrize("name", list(VARIANTS))
def test_greedy_matches_generate(marian, name):
    """Greedy decoding, token for token, and the text of our translate (batched) too."""
    model, tok, tr, _, _ = marian[name]
    texts = _test_sources(N_DECODE)
    finished = 0
    expected = []
    for text in texts:
        src = torch.tensor([tr.encode_source(text).ids])
        ours = greedy_decode(tr.model, src).ids[0]
        theirs = _generate(model, tok, text, max_new_tokens(tr.model, src.shape[1]), num_beams=1)
        assert ours == theirs, text
        finished += ours[-1] == tr.cfg.tgt_eos_id
        expected.append(tok.decode(theirs, skip_special_tokens=True))
    assert finished >= N_DECODE - 1  # the models end their sentences
    assert tr.translate(texts) == expected


@pytest.mark.parametrize("name", list(VARIANTS))
def test_beam_matches_generate(marian, name):
    """Beam search, k = 4, with no length penalty and early stopping (where both agree)."""
    model, tok, tr, _, _ = marian[name]
    for text in _test_sources(N_DECODE):
        src = torch.tensor([tr.encode_source(text).ids])
        ours = beam_search(tr.model, src, BEAM, length_penalty=0.0, early_stopping=True).ids[0]
        theirs = _generate(
            model,
            tok,
            text,
            max_new_tokens(tr.model, src.shape[1]),
            num_beams=BEAM,
            length_penalty=0.0,
            early_stopping=True,
        )
        assert ours == theirs, text


def test_trace_shows_marians_pieces(marian):
    """The app's trace: Marian's specials, pieces as they are, no start token on the source."""
    _, tok, tr, _, _ = marian["opus-mt"]
    trace = tr.trace("The cat sleeps.")
    assert trace.src_tokens == tok.convert_ids_to_tokens(tok("The cat sleeps.").input_ids)
    assert trace.tgt_tokens[0] == "<pad>" and trace.special_tokens == ["<pad>", "<unk>", "</s>"]
    assert trace.translation == tr.translate(["The cat sleeps."])[0]


# ------------------------------------------------------------------------- fine-tuning


@pytest.mark.parametrize("name", ["opus-mt", "separate-vocab"])
def test_training_batches_are_framed_as_marian_trains(marian, name):
    """Training reads a converted model's pairs as transformers trains Marian on them: the
    source ``x </s>`` (no start token), the labels ``y </s>``, the decoder fed its start token
    (<pad>) then y; so the training loss (no label smoothing) is MarianMTModel's."""
    from transformer.training.data import encode_pairs, make_batch
    from transformer.training.optim import batch_loss

    hf, tok, tr, _, _ = marian[name]
    pairs = tatoeba_pairs("test", 8)
    encoded = encode_pairs(pairs, tr.src_tok, tr.tgt_tok, tr.cfg)
    for (src, tgt), (s, t) in zip(pairs, encoded):
        assert frame_source(tr.cfg, s) == tok(src).input_ids
        assert [*t, tr.cfg.tgt_eos_id] == tok(text_target=tgt).input_ids
    batch = make_batch(encoded, tr.cfg)
    labels = torch.full(batch.tgt_out.shape, -100)  # transformers' "no label" (its decoder input: <pad>)
    for row, (_, t) in enumerate(encoded):
        labels[row, : len(t) + 1] = torch.tensor([*t, tr.cfg.tgt_eos_id])
    with torch.no_grad():
        theirs = hf(input_ids=batch.src, attention_mask=batch.src != tr.cfg.src_pad_id, labels=labels).loss
        ours = batch_loss(tr.model, batch, label_smoothing=0.0)
    assert abs(float(ours) - float(theirs)) < 1e-5


def test_a_converted_model_fine_tunes_and_its_validation_decodes(marian, data_dir, tmp_path):
    """train.py --init-from a converted Marian model: two short epochs on the fixture corpus
    lower its validation loss, its validation decodes (best/ translates the split to the
    scores the run recorded), and best/ is still a Marian model (no source start token, the
    decoder starting from <pad>) whose card credits the model it started from, under its licence."""
    import train
    from transformer.core.metrics import corpus_scores
    from transformer.training.data import load_split
    from transformer.training.distributed import StopSignals
    from transformer.training.evaluation import Validation

    start, out = marian["opus-mt"][2], tmp_path / "fine-tuned"
    args = ["--preset", "tiny", "--dataset", str(data_dir), "--init-from", str(marian["opus-mt"][4])]
    args += ["--out", str(out), "--epochs", "2", "--batch-tokens", "300", "--snapshots", "none"]
    assert train.main([*args, "--storage-dtype", "float32", "--threads", "1", "--device", "cpu"]) == 0
    pairs = load_split(str(data_dir), "validation", "en", "it")
    validation = Validation(pairs, start.src_tok, start.tgt_tok, start.cfg, limit=len(pairs), batch_tokens=300)
    before = validation.measure(start.model, StopSignals()).val_loss
    history = [r for r in json.loads((out / "history.json").read_text()) if "epoch" in r]
    assert [r["epoch"] for r in history] == [1, 2] and history[-1]["val_loss"] < before
    best = load_translator(out / "best")
    assert best.cfg.src_sos_id is None and best.cfg.tgt_sos_id == best.cfg.tgt_pad_id == start.cfg.tgt_pad_id
    scores = corpus_scores(best.translate([s for s, _ in pairs]), [t for _, t in pairs])
    assert scores == json.loads((out / "best" / "metrics.json").read_text())["validation"]
    card = (out / "best" / "README.md").read_text()
    assert "license: cc-by-4.0" in card and "from-scratch" not in card
    assert f"Transformer (fine-tuned from {start.cfg.extra['converted_from']})" in card


# ------------------------------------------------------------------------- the converter


def test_converted_checkpoint_files_and_card(marian):
    _, _, tr, folder, out = marian["opus-mt"]
    names = sorted(p.name for p in Path(out).iterdir())
    assert names == ["README.md", "config.json", "model.safetensors", "tokenizer_src.json", "tokenizer_tgt.json"]
    card = (Path(out) / "README.md").read_text()
    assert "license: cc-by-4.0" in card and str(folder) in card and "from_marian" in card
    cfg = json.loads((Path(out) / "config.json").read_text())
    assert cfg["extra"] == {"converted_from": str(folder), "license": "cc-by-4.0"}
    assert (cfg["activation"], cfg["positional_table"], cfg["norm_placement"], cfg["src_sos_id"]) == (
        "swish",
        "halves",
        "post",
        None,
    )
    assert cfg["tgt_sos_id"] == cfg["tgt_pad_id"] and cfg["tgt_banned_ids"] == [cfg["tgt_pad_id"]]


def test_licence_read_from_the_source_readme(marian, tmp_path):
    _, _, _, folder, _ = marian["opus-mt"]
    src = tmp_path / "src"
    src.mkdir()
    for f in Path(folder).iterdir():
        (src / f.name).write_bytes(f.read_bytes())
    (src / "README.md").write_text("---\nlanguage: en\nlicense: apache-2.0\n---\n# a model\n")
    assert from_marian.main([str(src), "--out", str(tmp_path / "out")]) == 0
    card = (tmp_path / "out" / "README.md").read_text()
    assert "license: apache-2.0" in card and "cc-by-4.0" not in card


def test_hub_id_is_downloaded(marian, tmp_path, monkeypatch):
    """A hub id goes to snapshot_download (mocked at the network boundary here)."""
    import huggingface_hub

    _, _, _, folder, _ = marian["opus-mt"]
    asked = {}

    def fake_download(repo_id, revision=None, allow_patterns=None, **kwargs):
        asked.update(repo_id=repo_id, patterns=allow_patterns)
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    assert from_marian.main(["Helsinki-NLP/opus-mt-en-it", "--out", str(tmp_path / "out")]) == 0
    assert asked["repo_id"] == "Helsinki-NLP/opus-mt-en-it" and "source.spm" in asked["patterns"]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "https://huggingface.co/Helsinki-NLP/opus-mt-en-it" in card
    assert load_translator(tmp_path / "out").cfg.src_lang == "en"


def test_bad_input_is_one_line_and_exit_2(marian, tmp_path, capfd, monkeypatch):
    import huggingface_hub

    _, _, _, folder, _ = marian["opus-mt"]
    missing = [str(tmp_path / "missing"), "--out", str(tmp_path / "o")]
    assert "no such folder" in exit_2(capfd, from_marian.main, missing)
    shipped = Path(__file__).parent.parent / "checkpoints" / "en-it"
    assert "not a Marian model" in exit_2(capfd, from_marian.main, [str(shipped), "--out", str(tmp_path / "o")])
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    assert "--force" in exit_2(capfd, from_marian.main, [str(folder), "--out", str(busy)])

    def offline(**kwargs):
        raise OSError("offline")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    message = exit_2(capfd, from_marian.main, ["Helsinki-NLP/opus-mt-xx-yy", "--out", str(tmp_path / "o")])
    assert "could not be downloaded" in message
    no_spm = tmp_path / "no-spm"
    no_spm.mkdir()
    for f in Path(folder).iterdir():
        if f.name != "source.spm":
            (no_spm / f.name).write_bytes(f.read_bytes())
    assert "source.spm" in exit_2(capfd, from_marian.main, [str(no_spm), "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()
    assert from_marian.main([str(folder), "--out", str(busy), "--force"]) == 0


def test_evaluate_command_reads_a_converted_checkpoint(marian, tmp_path, capsys):
    from tests.helpers import write_jsonl
    from transformer.cli import evaluate

    _, _, _, _, out = marian["opus-mt"]
    data = write_jsonl(tmp_path / "test.jsonl", tatoeba_pairs("test", 6))
    assert evaluate.main(["--checkpoint", str(out), "--data", str(data)]) in (0, None)
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 6


def test_a_marian_hub_id_converts_once_into_the_cache(marian, tmp_path, monkeypatch):
    """``--checkpoint marian:<hub id>`` (a Space's way to serve OPUS-MT): downloaded (mocked at
    the network boundary) and converted on the first start, read from the cache after that."""
    import huggingface_hub

    from transformer.cli import load_translator_or_exit

    _, _, ours, folder, _ = marian["opus-mt"]
    downloads = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo_id, **kw: downloads.append(repo_id) or folder)
    monkeypatch.setenv("MARIAN_CACHE", str(tmp_path / "cache"))
    first = load_translator_or_exit("marian:Helsinki-NLP/opus-mt-en-it")
    again = load_translator_or_exit("marian:Helsinki-NLP/opus-mt-en-it")
    assert downloads == ["Helsinki-NLP/opus-mt-en-it"]  # the second start reads the cache
    assert first.directory == again.directory == tmp_path / "cache" / "Helsinki-NLP--opus-mt-en-it"
    assert first.cfg.extra["converted_from"] == "Helsinki-NLP/opus-mt-en-it"
    text = _test_sources(1)[0]
    assert first.translate([text]) == ours.translate([text])


def test_a_marian_hub_id_that_cannot_be_fetched_is_one_line(tmp_path, capfd, monkeypatch):
    import huggingface_hub

    from transformer.cli import load_translator_or_exit

    def offline(repo_id, **kw):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    monkeypatch.setenv("MARIAN_CACHE", str(tmp_path / "cache"))
    line = exit_2(capfd, load_translator_or_exit, "marian:Helsinki-NLP/opus-mt-en-it")
    assert line.startswith("error: marian:Helsinki-NLP/opus-mt-en-it:") and "could not be downloaded" in line
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
