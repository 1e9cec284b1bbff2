"""What the class's charts and phones say (explorer/web/classroom-answers.js), run under Node.js on
a small hand-made trace: the model's answer of each kind of question, the class's rows, the short
charts of a long sentence, and a student's verdict."""

from __future__ import annotations

from tests.helpers import needs_node, run_node

SCRIPT = """
globalThis.document = { createElement: () => ({ getContext: () => ({}) }) }; // canvas.js makes canvases at load
const m = await import("./classroom-answers.js");
// a trace as payload.js gives it: 3 steps, 6 source tokens, 2 decoder layers, weights in W[layer][step][key]
const W = [
  [[0.1, 0.6, 0.1, 0.1, 0.05, 0.05], [0.1, 0.1, 0.6, 0.1, 0.05, 0.05], [0.05, 0.05, 0.1, 0.2, 0.5, 0.1]],
  [[0.2, 0.5, 0.1, 0.1, 0.05, 0.05], [0.1, 0.1, 0.1, 0.6, 0.05, 0.05], [0.05, 0.05, 0.1, 0.1, 0.6, 0.1]],
];
const cands = [
  [["▁Ho", 0.9], ["▁Io", 0.05]],
  [["▁una", 0.7], ["▁la", 0.2], ["▁un", 0.05], ["▁questa", 0.02], ["▁mia", 0.01], ["▁sua", 0.01], ["▁tua", 0.005]],
  [["▁macchina", 0.8], ["▁auto", 0.1]],
];
const lens = [
  [[["▁Io", 0.5]], [["▁Ho", 0.9]]],
  [[["▁una", 0.4], ["▁la", 0.3]], [["▁una", 0.8]]],
  [[["▁auto", 0.4], ["▁macchina", 0.2]], [["▁macchina", 0.9]]],
];
const tr = {
  steps: 3, src: ["[SOS]", "▁I", "▁have", "▁a", "▁car", "[EOS]"], tgt: ["[SOS]", "▁Ho", "▁una", "▁macchina"],
  layers: () => 2,
  weight: (view, layer, head, q, k) => W[layer][q][k],
  topk: (t) => cands[t].map(([token, prob], rank) => ({ token, prob, rank })),
  lens: (t) => lens[t].map((top) => top.map(([token, prob]) => ({ token, prob }))),
};
const q = (kind, step, choices = []) => ({ kind, step, choices });
const out = {};
const pick = (a) => a && { key: a.key, label: a.label, text: a.text,
  rows: a.rows.map((r) => [r.key, +r.value.toFixed(3)]) };
out.next = pick(m.modelAnswer(tr, q("next_word", 2), null));
out.sourceCross = pick(m.modelAnswer(tr, q("source_token", 2), { view: "cross", layer: 1, head: "mean" }));
out.sourceOther = pick(m.modelAnswer(tr, q("source_token", 2), { view: "encoder", layer: 1, head: "3" }));
out.layer = pick(m.modelAnswer(tr, q("layer", 3), null));
out.noStep = m.modelAnswer(tr, q("next_word", 4), null);
const typed = { answered: 20, answers: ["una", "la", "un", "questa", "mia", "sua", "tua", "nostra", "vostra"]
  .map((a, i) => ({ answer: a, label: a, count: i < 2 ? 6 : 1 })) };
out.typedRows = m.classRows(typed, q("next_word", 2)).map((r) => [r.key, r.label, r.count, +r.value.toFixed(3)]);
const chose = { answered: 3,
  answers: [{ answer: "3", label: "have", count: 2 }, { answer: "5", label: "car", count: 1 }] };
out.choiceRows = m.classRows(chose, q("source_token", 2, ["[SOS]", "I", "have", "a", "car", "[EOS]"]))
  .map((r) => [r.key, r.label, r.count]);
// a long sentence: 20 tokens, the model reads three of them, the class picked one more
const long = Array.from({ length: 20 }, (_, i) => `w${i + 1}`);
const model = { key: "4", rows: long.map((w, i) => ({ key: String(i + 1), label: w,
  value: i === 3 ? 0.7 : i === 9 ? 0.2 : i === 14 ? 0.06 : 0.04 / 17 })) };
const rows = m.chartRows(q("source_token", 2, long), m.classRows({ answered: 1, answers: [{ answer: "18", count: 1 }] },
  q("source_token", 2, long)), model);
out.longKeys = [rows.cls.map((r) => r.key), rows.model.rows.map((r) => r.key)];
out.shortKept = m.chartRows(q("source_token", 2, ["a", "b"]), [1, 2], null).cls;
const ans = m.modelAnswer(tr, q("next_word", 2), null);
out.verdicts = [m.verdict(q("next_word", 2), "una", ans), m.verdict(q("next_word", 2), "la", ans),
  m.verdict(q("next_word", 2), "gatto", ans), m.verdict(q("next_word", 2), null, ans),
  m.verdict(q("source_token", 2, tr.src.map(m.word)), "2", m.modelAnswer(tr, q("source_token", 2), null))];
out.ask = m.ASK.layer.question(3, "▁macchina");
console.log(JSON.stringify(out));
"""


@needs_node
def test_the_model_and_the_class_answer_each_kind_of_question(tmp_path):
    got = run_node(tmp_path, ("classroom-answers.js",), SCRIPT)
    # next word: the step's own candidates (at most six), the word it writes marked
    assert got["next"]["key"] == "una" and got["next"]["text"] == "The model writes “una”, p = 0.70."
    assert [k for k, _ in got["next"]["rows"]] == ["una", "la", "un", "questa", "mia", "sua"]
    # source word: the view's cross-attention row; another view reads the last layer's mean
    assert got["sourceCross"]["key"] == "3" and got["sourceCross"]["label"] == "have"
    assert "layer 1, mean over heads" in got["sourceCross"]["text"]
    assert got["sourceOther"]["key"] == "4" and "layer 2, mean over heads" in got["sourceOther"]["text"]
    # layer: the first layer from which the lens keeps the step's word on top
    assert got["layer"]["key"] == "2" and got["layer"]["rows"] == [["1", 0.2], ["2", 0.9]]
    assert "“macchina” on top from layer 2 on" in got["layer"]["text"]
    assert got["noStep"] is None


@needs_node
def test_the_class_rows_and_a_long_sentences_short_charts(tmp_path):
    got = run_node(tmp_path, ("classroom-answers.js",), SCRIPT)
    typed = got["typedRows"]
    assert [r[0] for r in typed[:5]] == ["una", "la", "un", "questa", "mia"] and typed[0][3] == 0.3
    assert typed[5] == [None, "4 other words", 4, 0.2]  # the rarest folded into one row
    assert got["choiceRows"] == [
        ["1", "[SOS]", 0],
        ["2", "I", 0],
        ["3", "have", 2],
        ["4", "a", 0],
        ["5", "car", 1],
        ["6", "[EOS]", 0],
    ]
    cls, model = got["longKeys"]
    assert cls == model == ["4", "10", "15", "18"]  # the model's top three (one at 0.06) and the class's pick
    assert got["shortKept"] == [1, 2]


@needs_node
def test_a_phone_says_the_students_answer_beside_the_models(tmp_path):
    right, close, absent, none, source = run_node(tmp_path, ("classroom-answers.js",), SCRIPT)["verdicts"]
    assert right == "You said “una”. The model writes “una”, p = 0.70. The same as yours!"
    assert close.endswith("Yours gets 0.20 (probability).")
    assert absent.endswith("Yours is not among its top candidates.")
    assert none.startswith("You did not answer. The model writes “una”")
    assert source.startswith("You said “I”. The model reads “a” most: 0.60 of its attention (cross-attention, layer 2")
    assert run_node(tmp_path, ("classroom-answers.js",), SCRIPT)["ask"].startswith("Step 3 writes “macchina”")
