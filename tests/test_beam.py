"""Beam search (transformer/core/beam.py): greedy equivalence, the KV cache against a recomputing
reference, the documented ranking, batching, and the beam-tree schema."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tests.helpers import PAIRS, load_script, tiny_config
from transformer.core.beam import (
    Candidate,
    Hypothesis,
    SearchRecord,
    SearchSettings,
    beam_search,
    candidate_statuses,
    gnmt_length_penalty,
    hypothesis_score,
    translate_beam,
)
from transformer.interpret.beam_tree import TREE_SCHEMA, beam_tree, build_tree, tree_of
from transformer.core.decoding import greedy_decode
from transformer.core.model import build_model
from transformer.core.translator import Translator

SENTENCES = [s for s, _ in PAIRS[:8]]


@pytest.fixture(scope="module")
def tiny(tokenizers_pair):
    """A random tiny model whose searches end in a mix of [EOS] and the length limit.

    A separate output projection (not tied) lets us shape the logits without touching the
    embeddings: [PAD]/[SOS] rows are zeroed (beam search never proposes them, and a random
    model would otherwise pick them where greedy does not) and the [EOS] row is scaled up
    so hypotheses finish at varied lengths.
    """
    src_tok, tgt_tok = tokenizers_pair
    cfg = tiny_config(src_tok, tgt_tok, tie_embeddings="none")
    torch.manual_seed(0)
    model = build_model(cfg).eval()
    with torch.no_grad():
        model.proj.weight[cfg.tgt_pad_id] = 0.0
        model.proj.weight[cfg.tgt_sos_id] = 0.0
        model.proj.weight[cfg.tgt_eos_id] *= 3.0
    return Translator(model, src_tok, tgt_tok)


def src_ids(tr, text):
    return tr.encode_source(text).ids


def padded(tr, texts):
    seqs = [src_ids(tr, t) for t in texts]
    src = torch.full((len(seqs), max(map(len, seqs))), tr.cfg.src_pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        src[i, : len(s)] = torch.tensor(s)
    return src


def teacher_forced_logprobs(model, src_row, ids):
    """Per-token log P(ids[t] | ids[:t], source) from one full forward pass."""
    cfg = model.cfg
    with torch.no_grad():
        logits = model(torch.tensor([src_row]), torch.tensor([[cfg.tgt_sos_id, *ids[:-1]]])).logits[0]
    return logits.log_softmax(-1).gather(1, torch.tensor(ids)[:, None])[:, 0].tolist()


@torch.no_grad()
def reference_beam(model, src_row, k, alpha, early_stopping, max_len):
    """Beam search written plainly: one hypothesis at a time, the whole prefix through the
    decoder at every step (no cache), candidates over the whole vocabulary."""
    cfg = model.cfg
    src = torch.tensor([src_row])
    src_mask = model.src_mask(src)
    memory, _ = model.encode(src, src_mask)
    banned = {cfg.tgt_pad_id, cfg.tgt_sos_id}
    alive = [([], 0.0)]
    finished = []  # (score, logprob, ids, eos)

    def offer(lp, ids, eos):
        finished.append((lp / ((5 + len(ids)) / 6) ** alpha, lp, ids, eos))
        finished.sort(key=lambda f: -f[0])  # stable: the earlier one first on ties
        del finished[k:]

    for t in range(max_len):
        cands = []
        for ids, lp in alive:
            dec = model.decode(torch.tensor([[cfg.tgt_sos_id, *ids]]), memory, src_mask)
            logits = model.project(dec.hidden[0, -1])
            logp = logits.log_softmax(-1)
            toks = sorted((v for v in range(cfg.tgt_vocab_size) if v not in banned), key=lambda v: -float(logits[v]))
            cands += [(lp + float(logp[v]), ids + [v]) for v in toks[: 2 * k]]
        cands.sort(key=lambda c: -c[0])
        alive = []
        for rank, (lp, ids) in enumerate(cands[: 2 * k]):
            if ids[-1] == cfg.tgt_eos_id:
                if rank < k:
                    offer(lp, ids, True)
            elif len(alive) < k:
                alive.append((ids, lp))
        if t + 1 == max_len:
            for ids, lp in alive:
                offer(lp, ids, False)
            break
        if len(finished) >= k:
            if early_stopping or max(lp for _, lp in alive) / ((5 + max_len) / 6) ** alpha <= finished[-1][0]:
                break
    return finished


# --- beam of 1 == greedy --------------------------------------------------------------


def test_beam_of_one_is_greedy_on_a_tiny_random_model(tiny):
    src = padded(tiny, SENTENCES)
    greedy = greedy_decode(tiny.model, src).ids
    assert any(g[-1] == tiny.cfg.tgt_eos_id for g in greedy)  # both ways of ending are exercised
    assert any(g[-1] != tiny.cfg.tgt_eos_id for g in greedy)
    assert beam_search(tiny.model, src, 1).ids == greedy
    for text, g in zip(SENTENCES, greedy):  # and one sentence at a time
        assert beam_search(tiny.model, torch.tensor([src_ids(tiny, text)]), 1).ids[0] == g
    assert beam_search(tiny.model, src, 1, max_steps=3).ids == greedy_decode(tiny.model, src, max_steps=3).ids


def test_beam_of_one_is_greedy_on_the_shipped_checkpoint(shipped):
    texts = [
        "The black cat sleeps on the red chair.",
        "Where is the station?",
        "I don't know what you want.",
        "My sister bought a beautiful red dress for the party.",
        "Tom is taller than Mary.",
        "We will go to the sea tomorrow if it doesn't rain.",
        "Hi!",
        "Can you help me, please?",
    ]
    assert translate_beam(shipped, texts, beam_size=1, batch_size=3) == shipped.translate(texts)
    src = padded(shipped, texts)
    assert beam_search(shipped.model, src, 1).ids == greedy_decode(shipped.model, src).ids


# --- the cache ----------------------------------------------------------------------


@pytest.mark.parametrize("k,alpha,early", [(2, 0.6, True), (3, 0.0, True), (4, 1.5, False), (5, 0.6, False)])
def test_cached_beam_equals_a_recomputing_reference(tiny, k, alpha, early):
    for text in SENTENCES[:4]:
        row = src_ids(tiny, text)
        limit = min(tiny.cfg.max_positions, 2 * len(row) + 10)
        ref = reference_beam(tiny.model, row, k, alpha, early, limit)
        got = beam_search(tiny.model, torch.tensor([row]), k, length_penalty=alpha, early_stopping=early)
        assert [h.ids for h in got.hypotheses[0]] == [r[2] for r in ref]
        assert [h.eos for h in got.hypotheses[0]] == [r[3] for r in ref]
        for h, r in zip(got.hypotheses[0], ref):
            assert h.score == pytest.approx(r[0], abs=1e-4)
            assert h.logprob == pytest.approx(r[1], abs=1e-4)


def test_each_step_feeds_only_the_new_token_and_cross_kv_is_projected_once(tiny):
    layer = tiny.model.decoder_layers[0]
    self_lens, cross_calls = [], []
    hooks = [
        layer.self_attn.k_proj.register_forward_hook(lambda m, inp, out: self_lens.append(inp[0].shape[1])),
        layer.cross_attn.k_proj.register_forward_hook(lambda m, inp, out: cross_calls.append(inp[0].shape[0])),
    ]
    try:
        res = beam_search(tiny.model, padded(tiny, SENTENCES[:3]), 4)
    finally:
        for h in hooks:
            h.remove()
    assert cross_calls == [3]  # once, for the 3 sentences, before the beams were expanded
    assert len(self_lens) == max(len(h.ids) for hyps in res.hypotheses for h in hyps)
    assert set(self_lens) == {1}  # the prefix is never fed again


# --- ranking and batching -------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_finished_hypotheses_are_ranked_by_the_documented_score(tiny, alpha):
    texts = SENTENCES[:6]
    res = beam_search(tiny.model, padded(tiny, texts), 4, length_penalty=alpha)
    for b, text in enumerate(texts):
        row = src_ids(tiny, text)
        hyps = res.hypotheses[b]
        assert len(hyps) == 4
        for h in hyps:
            lp = sum(teacher_forced_logprobs(tiny.model, row, h.ids))
            assert h.logprob == pytest.approx(lp, abs=1e-4)
            assert h.score == pytest.approx(lp / ((5 + len(h.ids)) / 6) ** alpha, abs=1e-4)
            assert h.eos == (h.ids[-1] == tiny.cfg.tgt_eos_id)
            # a hypothesis without [EOS] was cut at the length limit
            assert h.eos or len(h.ids) == min(tiny.cfg.max_positions, 2 * len(row) + 10)
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        assert res.ids[b] == hyps[0].ids and res.scores[b] == hyps[0].score


def test_length_penalty_formula():
    assert gnmt_length_penalty(1, 0.6) == 1.0
    assert gnmt_length_penalty(7, 1.0) == pytest.approx(2.0)
    assert gnmt_length_penalty(30, 0.0) == 1.0


def test_searching_past_early_stopping_never_loses_score(tiny):
    src = padded(tiny, SENTENCES)
    early = beam_search(tiny.model, src, 3, early_stopping=True)
    full = beam_search(tiny.model, src, 3, early_stopping=False)
    for a, b in zip(early.scores, full.scores):
        assert b >= a - 1e-6


def test_batch_results_equal_single_sentence_results(tiny):
    texts = SENTENCES + ["open the window, please.", "i do not like tea."]
    batch = beam_search(tiny.model, padded(tiny, texts), 3)
    for b, text in enumerate(texts):
        one = beam_search(tiny.model, torch.tensor([src_ids(tiny, text)]), 3)
        assert [h.ids for h in one.hypotheses[0]] == [h.ids for h in batch.hypotheses[b]]
        assert one.scores[0] == pytest.approx(batch.scores[b], abs=1e-4)
    assert translate_beam(tiny, texts, 3, batch_size=4) == [translate_beam(tiny, [t], 3)[0] for t in texts]


def test_translator_translate_dispatches_to_beam_search(tiny):
    texts = SENTENCES[:5]
    beams = [beam_search(tiny.model, torch.tensor([src_ids(tiny, t)]), 3).ids[0] for t in texts]
    assert tiny.translate(texts, beam_size=3) == [tiny._decode_text(ids) for ids in beams]
    assert tiny.translate(texts, beam_size=3) != tiny.translate(texts)  # the beam does change some outputs


# --- the tree -------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3])
def test_tree_schema(tiny, k):
    texts = SENTENCES[:3]
    src = padded(tiny, texts)
    res = beam_search(tiny.model, src, k, return_records=True)
    trees = [tree_of(tiny.model, src, res, b, tiny.tgt_tok) for b in range(len(texts))]
    greedy = greedy_decode(tiny.model, src).ids
    if k > 1:  # greedy leaves the beam somewhere: the tree then holds greedy-only nodes
        assert any(n["source"] == "greedy" for tree in trees for n in tree["nodes"])
    for b, tree in enumerate(trees):
        json.dumps(tree)
        assert tree["schema"] == TREE_SCHEMA and tree["beam_size"] == k
        nodes = tree["nodes"]
        assert [n["id"] for n in nodes] == list(range(len(nodes)))
        assert [n["id"] for n in nodes if n["parent"] is None] == [0]
        for n in nodes[1:]:
            parent = nodes[n["parent"]]
            assert n["parent"] < n["id"] and n["step"] == parent["step"] + 1
            assert n["status"] in {"kept", "pruned", "finished"} and n["source"] in {"beam", "greedy"}
            assert n["token"] == tiny.tgt_tok.id_to_token(n["token_id"])
            assert n["logprob"] == pytest.approx(parent["logprob"] + math.log(n["prob"]), abs=1e-4)
            if n["source"] == "beam":
                assert parent["status"] == "kept"  # only hypotheses in the beam are expanded
            if n["status"] == "finished":
                assert n["eos"] or n["step"] == tree["max_steps"]
        for step in range(1, tree["steps"] + 1):
            at = [n for n in nodes if n["step"] == step and n["source"] == "beam"]
            assert len(at) <= 2 * k and sum(n["status"] == "kept" for n in at) <= k
            assert sorted(n["rank"] for n in at) == list(range(len(at)))
        # exactly one best path, from the root to the best finished node
        path = tree["best_path"]
        assert path[0] == 0 and path[-1] == tree["best"] and nodes[tree["best"]]["status"] == "finished"
        assert all(nodes[c]["parent"] == p for p, c in zip(path, path[1:]))
        assert {n["id"] for n in nodes if n["on_best"]} == set(path)
        assert [nodes[i]["token_id"] for i in path[1:]] == res.ids[b]
        assert tree["hypotheses"][0]["node"] == tree["best"]
        assert tree["hypotheses"][0]["score"] == pytest.approx(res.scores[b], abs=1e-5)
        # the greedy path is the greedy decoding, with its teacher-forced log-prob
        gpath = tree["greedy_path"]
        assert [nodes[i]["token_id"] for i in gpath[1:]] == greedy[b]
        assert {n["id"] for n in nodes if n["on_greedy"]} == set(gpath)
        lp = sum(teacher_forced_logprobs(tiny.model, src_ids(tiny, texts[b]), greedy[b]))
        assert tree["greedy_logprob"] == pytest.approx(lp, abs=1e-4)
        if k == 1:
            assert gpath == path and all(nodes[i]["source"] == "beam" for i in gpath)


@pytest.mark.parametrize(
    "tokens,k,expected",
    [
        ([3, 10, 11, 12], 2, ["finished", "kept", "kept", "pruned"]),
        ([10, 3, 11, 12], 1, ["kept", "pruned", "pruned", "pruned"]),  # an [EOS] ranked k or lower is dropped
        ([3, 3, 10, 11, 12, 13], 3, ["finished", "finished", "kept", "kept", "kept", "pruned"]),
    ],
)
def test_candidate_statuses_follow_the_documented_walk(tokens, k, expected):
    assert candidate_statuses(tokens, k, eos_id=3) == expected


def test_build_tree_needs_only_the_search_record(tiny):
    """A hand-written record of a two-step search (k = 1) becomes the tree: its nodes,
    paths and scores. Greedy stays inside the beam, so the model is never run (no source
    is passed)."""
    cfg = tiny.cfg
    eos, a, b, c = cfg.tgt_eos_id, 10, 11, 12
    lp_a, lp_b, lp_eos, lp_c = -0.2, -1.9, -0.5, -1.2
    record = SearchRecord(
        limit=5,
        candidates=[
            Candidate(0, 1, a, lp_a, lp_a, 0, "kept"),
            Candidate(0, 1, b, lp_b, lp_b, 1, "pruned"),
            Candidate(1, 2, eos, lp_a + lp_eos, lp_eos, 0, "finished"),
            Candidate(1, 2, c, lp_a + lp_c, lp_c, 1, "pruned"),
        ],
        greedy_next={0: (a, lp_a), 1: (eos, lp_eos)},
    )
    best = Hypothesis([a, eos], lp_a + lp_eos, hypothesis_score(lp_a + lp_eos, 2, 0.6), True, node=3)
    settings = SearchSettings(beam_size=1, length_penalty=0.6, early_stopping=True, max_steps=None)
    tree = build_tree(tiny.model, None, record, [best], settings, tiny.tgt_tok)
    nodes = tree["nodes"]
    assert [n["token_id"] for n in nodes] == [cfg.tgt_sos_id, a, b, eos, c]
    assert [n["parent"] for n in nodes] == [None, 0, 0, 1, 1]
    assert [n["status"] for n in nodes] == ["kept", "kept", "pruned", "finished", "pruned"]
    assert [n["rank"] for n in nodes] == [None, 0, 1, 0, 1]
    assert [n["prob"] for n in nodes[1:]] == pytest.approx([math.exp(x) for x in (lp_a, lp_b, lp_eos, lp_c)], rel=1e-5)
    assert tree["best_path"] == tree["greedy_path"] == [0, 1, 3]
    assert [n["id"] for n in nodes if n["on_best"]] == [0, 1, 3]
    assert all(n["source"] == "beam" for n in nodes)
    assert [n["score"] for n in nodes] == [None, None, None, round(best.score, 6), None]
    assert tree["greedy_logprob"] == round(lp_a + lp_eos, 6) and tree["greedy_score"] == round(best.score, 6)
    assert (tree["steps"], tree["max_steps"], tree["candidates_per_step"]) == (2, 5, 2)
    assert tree["hypotheses"] == [
        {
            "node": 3,
            "ids": [a, eos],
            "logprob": round(best.logprob, 6),
            "score": round(best.score, 6),
            "length": 2,
            "eos": True,
        }
    ]


def test_beam_tree_for_the_app(tiny):
    text = SENTENCES[1]
    translation, tree = beam_tree(tiny, text, 4)
    assert translation == translate_beam(tiny, [text], 4)[0] == tree["translation"]
    assert tree["src_text"] == text and tree["src_tokens"][0] == "[SOS]"
    assert tree["greedy_translation"] == tiny.translate([text])[0]
    assert tree["hypotheses"][0]["text"] == translation
    assert len(json.dumps(tree)) < 200_000


@pytest.mark.parametrize(
    "text,k,message",
    [
        ("", 4, "empty"),
        ("   \n", 4, "empty"),
        (None, 4, "expected text"),
        ("the cat sleeps.", 0, "between 1 and 8"),
        ("the cat sleeps.", 9, "between 1 and 8"),
        ("the cat sleeps.", 2.5, "whole number"),
        ("the cat sleeps.", True, "whole number"),
        ("the cat sleeps.", "4", "whole number"),
    ],
)
def test_beam_tree_rejects_bad_input_with_a_clear_message(tiny, text, k, message):
    with pytest.raises(ValueError, match=message):
        beam_tree(tiny, text, k)


def test_beam_tree_takes_long_and_odd_text(tiny):
    translation, tree = beam_tree(tiny, "🙂 <b>the cat</b>\x07 " + "the black cat sleeps. " * 40, 2.0)
    assert tree["truncated"] and isinstance(translation, str)


def test_translate_beam_and_beam_search_validate_their_arguments(tiny):
    assert translate_beam(tiny, [], 4) == []
    with pytest.raises(ValueError, match="sentence 1: empty"):
        translate_beam(tiny, ["the cat sleeps.", ""], 4)
    with pytest.raises(ValueError, match="batch_size"):
        translate_beam(tiny, ["the cat sleeps."], 4, batch_size=0)
    src = padded(tiny, SENTENCES[:1])
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(tiny.model, src, 2, length_penalty=-1)
    with pytest.raises(ValueError, match="max_steps"):
        beam_search(tiny.model, src, 2, max_steps=0)
    with pytest.raises(ValueError, match="too large"):
        beam_search(tiny.model, src, 100)
    tiny.model.train()
    try:
        with pytest.raises(ValueError, match="eval"):
            beam_search(tiny.model, src, 2)
    finally:
        tiny.model.eval()


def test_beam_eval_save_records_the_table_in_the_checkpoint(tiny_checkpoint, data_dir, tmp_path, capsys):
    """benchmarks/beam_eval.py --save: metrics.json gains 'beam', the card a 'Beam search'
    section after Scores, and the rest of both files is kept."""
    import shutil

    beam_eval = load_script("benchmarks/beam_eval.py")
    ckpt = Path(shutil.copytree(tiny_checkpoint, tmp_path / "ckpt"))
    (ckpt / "metrics.json").write_text(json.dumps({"validation": {"bleu": 1.0, "chrf": 2.0}}), encoding="utf-8")
    (ckpt / "README.md").write_text("# tiny\n\n## Scores\n\nsome\n\n## Data\n\ncredit\n", encoding="utf-8")
    argv = [
        "--checkpoint",
        str(ckpt),
        "--data",
        str(data_dir / "test.jsonl"),
        "--beam-sizes",
        "1,2",
        "--repeat",
        "1",
        "--save",
    ]
    assert beam_eval.main(argv) == 0
    metrics = json.loads((ckpt / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["validation"] == {"bleu": 1.0, "chrf": 2.0}
    beam = metrics["beam"]
    assert [r["decoder"] for r in beam["rows"]] == ["greedy", "beam k=1", "beam k=2"]
    assert beam["n"] == 6 and isinstance(beam["rows"][1]["equals_greedy"], bool)  # (an untrained model may pick [PAD])
    card = (ckpt / "README.md").read_text(encoding="utf-8")
    assert card.index("## Scores") < card.index("## Beam search") < card.index("## Data")
    assert card.startswith("# tiny\n\n## Scores\n\nsome\n") and card.endswith("## Data\n\ncredit\n")
    assert f"| beam k=2 | {beam['rows'][2]['bleu']:.2f} |" in card
    assert beam_eval.main(argv) == 0 and (ckpt / "README.md").read_text(encoding="utf-8").count("## Beam search") == 1
    # --save needs a local folder; nothing is written on a refusal
    assert beam_eval.main(["--checkpoint", str(tmp_path / "nowhere"), "--save"]) == 2
    assert "--save needs a local checkpoint folder" in capsys.readouterr().err
