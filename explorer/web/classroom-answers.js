// What a class's question is, and what answers it: the class's own (its tally, from the server)
// and the model's (read from the trace on screen, as the viewer reads it). Plain data, no page:
// classroom.js draws it. A question is {kind, step (1-based), choices}; its kinds:
//   next_word     the word step `step` writes; the model's side is the step's top-k candidates
//   source_token  the source token the step reads most; the model's side is the step's
//                 cross-attention row (the view's layer and head when the class sees
//                 cross-attention, else the last layer's mean)
//   layer         the first decoder layer whose logit lens has the step's word on top; the model's
//                 side is that word's probability in each layer's lens
// Choices are numbered from 1 (the server counts a picked choice by its number).

import { headIndex, headName, quote } from "./attention.js";
import { share } from "./numbers.js";

export const KINDS = ["next_word", "source_token", "layer"];
/** The buttons that ask each kind, and the question as the class reads it. */
// A question is about the step after the one on screen, so its answer is not drawn yet; the
// layer question names the word (`out`, when the trace is there), which the other two ask for.
export const ASK = {
  next_word: { button: "Next word", title: "Ask the class which word the next step writes",
    question: (step) => `Step ${step}: which word will the model write next?` },
  source_token: { button: "Which source word", title: "Ask the class which source word the next step reads most",
    question: (step) => `Step ${step}: which word of the sentence will the model read most?` },
  layer: { button: "Which layer", title: "Ask the class from which layer the logit lens has the next step's word",
    question: (step, out) => `Step ${step} writes ${out ? quote(word(out)) : "its word"}: from which layer on `
      + "does the logit lens have it on top?" },
};
const MAX_ROWS = 6; // a chart of words: the most said (or likely), then the rest of the class's as one bar
const KEEP_WEIGHT = 0.05; // a source token the model reads less than this, and nobody picked, stays off the chart

export const word = (tok) => (tok || "").replace(/▁/g, " ").trim() || tok || "";
/** A word as the tally counts it (the server casefolds typed answers). */
export const norm = (w) => word(w).toLowerCase();
const argmax = (xs) => xs.reduce((b, x, i) => (x > xs[b] ? i : b), 0);

/** The cross-attention layer (1-based) and head a source question reads: the view's, if it is cross. */
function crossOf(tr, v) {
  const L = tr.layers("cross");
  if (v && v.view === "cross") return { layer: Math.min(L, Math.max(1, Number(v.layer) || 1)), head: String(v.head) };
  return { layer: L, head: "mean" };
}

/** The first layer (1-based) from which the lens's top token at step index t stays `out`, or null. */
function lensFirst(lens, out) {
  let first = null;
  for (let l = lens.length - 1; l >= 0 && lens[l][0].token === out; l--) first = l + 1;
  return first;
}

const MODEL = {
  next_word: (tr, t) => {
    const out = tr.tgt[t + 1], cands = tr.topk(t), mine = cands.find((c) => c.token === out);
    return {
      rows: cands.slice(0, MAX_ROWS).map((c) => ({ key: norm(c.token), label: word(c.token), value: c.prob })),
      key: norm(out), label: word(out), unit: "probability",
      text: `The model writes ${quote(word(out))}${mine ? `, p = ${share(mine.prob)}` : ""}.`,
    };
  },
  source_token: (tr, t, v) => {
    const { layer, head } = crossOf(tr, v), h = headIndex(head);
    const row = tr.src.map((_, k) => tr.weight("cross", layer - 1, h, t, k)), top = argmax(row);
    return {
      rows: tr.src.map((tok, k) => ({ key: String(k + 1), label: word(tok), value: row[k] })),
      key: String(top + 1), label: word(tr.src[top]), unit: "attention",
      text: `The model reads ${quote(word(tr.src[top]))} most: ${share(row[top])} of its attention `
        + `(cross-attention, layer ${layer}, ${headName(head)}).`,
    };
  },
  layer: (tr, t) => {
    const lens = tr.lens(t), out = tr.tgt[t + 1];
    if (!lens) return null;
    const first = lensFirst(lens, out);
    return {
      rows: lens.map((top5, l) => ({ key: String(l + 1), label: `layer ${l + 1}`,
        value: (top5.find((c) => c.token === out) || { prob: 0 }).prob })),
      key: first === null ? null : String(first), label: first === null ? "none" : `layer ${first}`,
      unit: `p of ${quote(word(out))}`,
      text: first === null ? `No layer's lens has ${quote(word(out))} on top.`
        : `The logit lens has ${quote(word(out))} on top from layer ${first} on.`,
    };
  },
};

/** The model's answer to question `q` on trace `tr` for the class view `v`: {rows: [{key, label,
 * value}], key (the answer's), label, unit, text}; null when the trace has no such step. */
export function modelAnswer(tr, q, v) {
  const t = q.step - 1;
  if (!tr || !MODEL[q.kind] || t < 0 || t >= tr.steps) return null;
  return MODEL[q.kind](tr, t, v);
}

/** The class's answers as chart rows: {key, label, value (share of those who answered), count}.
 * Typed words by count, the rarest folded into one row; choices in their own order, every one. */
export function classRows(tally, q) {
  const n = tally ? tally.answered : 0, answers = tally ? tally.answers : [];
  if (q.kind === "next_word") {
    const rows = answers.map((a) => ({ key: norm(a.answer), label: a.label, value: n ? a.count / n : 0,
      count: a.count }));
    if (rows.length <= MAX_ROWS) return rows;
    const rest = rows.slice(MAX_ROWS - 1), c = rest.reduce((a, r) => a + r.count, 0);
    return [...rows.slice(0, MAX_ROWS - 1), { key: null, label: `${rest.length} other words`, value: n ? c / n : 0,
      count: c }];
  }
  const counts = new Map(answers.map((a) => [a.answer, a.count]));
  return q.choices.map((label, i) => {
    const c = counts.get(String(i + 1)) || 0;
    return { key: String(i + 1), label, value: n ? c / n : 0, count: c };
  });
}

/** A student's answer (as the server counted it) in words: the word, or the choice's label. */
export function mineLabel(q, mine) {
  if (mine === null || mine === undefined) return null;
  return q.kind === "next_word" ? mine : q.choices[Number(mine) - 1] || mine;
}

/** What a student's phone says once the answer is shown: their answer beside the model's. */
export function verdict(q, mine, model) {
  if (!model) return "";
  const said = mineLabel(q, mine);
  if (said === null) return `You did not answer. ${model.text}`;
  const key = q.kind === "next_word" ? norm(mine) : String(mine), row = model.rows.find((r) => r.key === key);
  const right = key === model.key;
  const yours = right ? "The same as yours!" : row ? `Yours gets ${share(row.value)} (${model.unit}).`
    : "Yours is not among its top candidates.";
  return `You said ${quote(said)}. ${model.text} ${yours}`;
}

/** The rows of a source question's two charts (`cls`: classRows, `model`: modelAnswer or null),
 * in the sentence's order: every token of a short sentence; of a long one the tokens someone
 * picked, those the model reads at least KEEP_WEIGHT and its top three, so the charts stay short. */
export function chartRows(q, cls, model) {
  if (q.kind !== "source_token" || q.choices.length <= 2 * MAX_ROWS) return { cls, model };
  const top = new Set(model ? [...model.rows].sort((a, b) => b.value - a.value).slice(0, 3).map((r) => r.key) : []);
  const keys = new Set(cls.filter((r, i) => r.count > 0 || top.has(r.key) || (model && model.rows[i].value
    >= KEEP_WEIGHT)).map((r) => r.key));
  return { cls: cls.filter((r) => keys.has(r.key)), model: model && { ...model, rows: model.rows.filter((r) =>
    keys.has(r.key)) } };
}
