// What an attention view shows, as numbers: which rows and columns (after hide-specials),
// and the weights of one head, or their mean or max over heads. Every view that draws
// attention (the viewer, the mosaic, the training snapshots) takes them from here.
// Rows are queries, columns are keys.

import { FUTURE_VALUE } from "./canvas.js";

export const VIEWS = {
  cross: "Cross-attention", decoder: "Decoder self-attention", encoder: "Encoder self-attention",
  rollout: "Rollout: source relevance",
};
export const AXES = {
  encoder: ["query: source token", "key: source token"],
  decoder: ["query: decoding step", "key: decoder input token"],
  cross: ["query: decoding step", "key: source token"],
  rollout: ["target step", "source token"],
};
/** Attention kind of a view, as the analyses name it (head masks, head stats). */
export const VIEW_KIND = { encoder: "encoder", decoder: "decoder_self", cross: "cross" };
export const KIND_VIEW = { encoder: "encoder", decoder_self: "decoder", cross: "cross" };
export const KIND_NAMES = { encoder: "encoder self-attention", decoder_self: "decoder self-attention",
  cross: "cross-attention" };

/** A head as people read it, from a 1-based {kind, layer, head}: "cross-attention, layer 1, head 4". */
export const headLabel = (h) => `${KIND_NAMES[h.kind]}, layer ${h.layer}, head ${h.head}`;
/** The head setting ("mean", "max" or "1".."H") in words. */
export const headName = (head) => (head === "mean" ? "mean over heads" : head === "max" ? "max over heads"
  : `head ${head}`);
/** The head setting as an array index: "mean" and "max" stay, "3" becomes 2. */
export const headIndex = (head) => (head === "mean" || head === "max" ? head : Number(head) - 1);

const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));
export const quote = (tok) => `“${tok}”`;

/** One head's weight at flat index p of an (L, H, Q, K) array (`stride` = Q * K), or the
 * mean or max over the H heads there. */
export function headValue(data, p, H, stride, head) {
  if (head !== "mean" && head !== "max") return data[p + head * stride];
  let acc = head === "mean" ? 0 : -Infinity;
  for (let h = 0; h < H; h++, p += stride) acc = head === "mean" ? acc + data[p] : Math.max(acc, data[p]);
  return head === "mean" ? acc / H : acc;
}

/** View settings a trace can show: unknown views, steps, layers and heads are pulled into
 * range (a hand-edited or old link never breaks the page). Input may be strings. */
export function validView(trace, s) {
  let view = VIEWS[s.view] ? s.view : "cross";
  if (view === "rollout" && !trace.rollout) view = "cross"; // a payload without analyses
  const int = (x, fallback) => (Number.isFinite(parseInt(x, 10)) ? parseInt(x, 10) : fallback);
  const n = int(s.head, null);
  const head = s.head === "mean" || s.head === "max" ? s.head : n === null ? "mean" : String(clamp(n, 1, trace.heads));
  return {
    view,
    step: clamp(int(s.step, 1), 1, trace.steps),
    // rollout has no layer: keep the one of the attention views, clamped as for cross
    layer: clamp(int(s.layer, 1), 1, trace.layers(view === "rollout" ? "cross" : view)),
    head,
    hide: s.hide === true || s.hide === "1" || s.hide === "true",
  };
}

// the label of a decoder input not written yet at this step (a column of decoder
// self-attention): a word, not a mark that could be read as a full stop
export const FUTURE_LABEL = "(future)";

/**
 * Rows and columns of one view at one step, after hide-specials: {rows, cols, causal}.
 * Each is {index (into the trace), label, tip}; rows and decoder inputs not generated yet are
 * {future: true} and never show their tokens, and the current step's row is {current: true}.
 * `compact` labels rows with just the emitted token (small multiples).
 */
export function layout(tr, { view, step, hide }, compact = false) {
  const t = step - 1;
  const keep = (tokens) => tokens.map((_, i) => i).filter((i) => !(hide && tr.isSpecial(tokens[i])));
  const srcCol = (i) => ({ index: i, label: tr.src[i], tip: `source token ${i + 1} ${quote(tr.src[i])}` });
  if (view === "encoder") {
    const idx = keep(tr.src);
    return { rows: idx.map(srcCol), cols: idx.map(srcCol), causal: false };
  }
  const rows = Array.from({ length: tr.steps }, (_, i) => (i <= t
    ? { index: i, label: compact ? tr.tgt[i + 1] : `${i + 1}: ${tr.tgt[i]} → ${tr.tgt[i + 1]}`, current: i === t,
      tip: `step ${i + 1} (reads ${quote(tr.tgt[i])}, emits ${quote(tr.tgt[i + 1])})` }
    : { index: i, label: compact ? "" : `${i + 1}: not generated yet`, future: true, tip: `step ${i + 1}` }));
  if (view !== "decoder") return { rows, cols: keep(tr.src).map(srcCol), causal: false };
  // decoder self-attention: keys are the decoder inputs; later inputs are not known yet at this step
  const cols = keep(tr.tgt.slice(0, tr.steps)).map((j) => (j <= t
    ? { index: j, label: tr.tgt[j], tip: `decoder input ${j + 1} ${quote(tr.tgt[j])}` }
    : { index: j, label: FUTURE_LABEL, future: true, tip: `decoder input ${j + 1} (not generated yet)` }));
  return { rows, cols, causal: true };
}

/** The shown rows x cols of one layer (0-based) and head (index, "mean" or "max") of an
 * attention view, as a row-major Float32Array. NaN marks masked cells (a causal key after
 * its query), FUTURE_VALUE rows not generated yet. */
export function attentionMatrix(tr, view, layer, head, { rows, cols, causal }) {
  const { shape: [, H, Q, K], data } = tr.attn[view];
  const R = rows.length, C = cols.length, out = new Float32Array(R * C);
  const colIdx = Int32Array.from(cols, (c) => c.index);
  const base = layer * H * Q * K;
  for (let r = 0; r < R; r++) {
    const q = rows[r].index, o = r * C;
    if (rows[r].future) { out.fill(FUTURE_VALUE, o, o + C); continue; }
    for (let c = 0; c < C; c++) {
      const k = colIdx[c];
      out[o + c] = causal && k > q ? NaN : headValue(data, base + q * K + k, H, Q * K, head);
    }
  }
  return out;
}

/** Each row of a rows x cols matrix divided by the sum of its values (masked NaN cells and rows
 * not generated yet stay as they are; a row of zeros stays zero), in place; returns it. */
export function normaliseRows(m, R, C) {
  for (let r = 0; r < R; r++) {
    let sum = 0;
    for (let c = 0; c < C; c++) { const v = m[r * C + c]; if (Number.isFinite(v)) sum += v; }
    if (sum > 0) for (let c = 0; c < C; c++) if (Number.isFinite(m[r * C + c])) m[r * C + c] /= sum;
  }
  return m;
}

/** Rows x cols of a (Q, K) analysis matrix (rollout), rows not generated yet hidden. */
export function analysisMatrix({ shape: [, K], data }, rows, cols) {
  const out = new Float32Array(rows.length * cols.length);
  rows.forEach((r, i) => {
    const o = i * cols.length;
    if (r.future) { out.fill(FUTURE_VALUE, o, o + cols.length); return; }
    cols.forEach((c, j) => { out[o + j] = data[r.index * K + c.index]; });
  });
  return out;
}

/** A source token that is punctuation or symbols only (".", ",", "?", ...), or the word-start
 * marker alone (before a character the vocabulary lacks): like the markers, a place a head parks
 * its weight rather than a word it reads. */
export const isPunct = (tok) => /^▁?[\p{P}\p{S}]*$/u.test(tok);

/** Whether token `i` of `toks` is a whole word: it starts one (▁) and the next token does not
 * continue it. A marker or punctuation ends a word too. */
export function isWholeWord(tr, toks, i) {
  const tok = toks[i], next = toks[i + 1];
  return tok.startsWith("▁") && (next === undefined || next.startsWith("▁") || tr.isSpecial(next) || isPunct(next));
}

/** Where cross-attention `layer` (0-based), `head` (index, "mean" or "max") looks clearly at a
 * word: each step past step 1 (one row only) that writes a word (not a marker or punctuation)
 * has its largest weight on one source word (not a marker or punctuation); of the steps within
 * CLEAR of the clearest, the latest, so the map shows as many rows as it can while its last row
 * is still sharp. Steps that write a whole word while looking at a whole word come first, then
 * steps that look at a whole word (a fragment such as the "f" of "sofa" tells a learner little);
 * only without either do fragments count. {step (1-based), key (0-based), weight}, or null when
 * there is no such step (a one-word translation, or a source of unknown characters only). */
export function clearestStep(tr, layer, head) {
  const peaks = [];
  for (let t = 1; t < tr.steps; t++) {
    const out = tr.tgt[t + 1];
    if (tr.isSpecial(out) || isPunct(out)) continue;
    let best = { step: t + 1, key: 0, weight: -1 };
    for (let k = 0; k < tr.src.length; k++) {
      if (tr.isSpecial(tr.src[k]) || isPunct(tr.src[k])) continue;
      const w = tr.weight("cross", layer, head, t, k);
      if (w > best.weight) best = { step: t + 1, key: k, weight: w };
    }
    // 2: a whole word written while looking at a whole word; 1: looking at a whole word
    best.grade = isWholeWord(tr, tr.src, best.key) ? 1 + isWholeWord(tr, tr.tgt, t + 1) : 0;
    peaks.push(best);
  }
  const grade = Math.max(0, ...peaks.map((p) => p.grade));
  const pool = peaks.filter((p) => p.grade === grade);
  const top = Math.max(0, ...pool.map((p) => p.weight));
  const pick = top > 0 ? pool.filter((p) => p.weight >= CLEAR * top).pop() : null;
  return pick && { step: pick.step, key: pick.key, weight: pick.weight };
}
const CLEAR = 0.8; // a step whose peak is at least this share of the clearest step's counts as clear

/** The largest value of a decoded array (1 if there is none), so a map's colour scale is
 * the sentence's and stepping never rescales it. */
export function maxOf(a) {
  let hi = 0;
  for (const v of a.data) hi = Math.max(hi, v);
  return hi > 0 ? hi : 1;
}
