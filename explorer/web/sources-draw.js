// Where did this word come from?, the drawing (sources.js is the view): the step's source/prefix
// bar and its row of tokens, the steps x tokens map, the DecoderLens table and the scored
// reference. Plain functions of the data (and, for a click, a callback), kept apart from the
// view so the view holds only its state. All text goes in as text (el(..., {text})): tokens
// and sentences are the visitor's.

import { quote } from "./attention.js";
import { el, css, blue, inkOn, usePalette, GAP_VALUE } from "./canvas.js";
import { drawHeatmap } from "./heatmap.js";
import { share } from "./numbers.js";
import { OURS } from "./names.js";

const pct = (x) => `${(100 * x).toFixed(1)}%`;

/** The contributions `choice` picks, as {source: T x S, prefix: T x T}: "all" (through every
 * layer, the default), "upto:l" (composed through decoder layers 1..l) or "layer:l" (decoder
 * layer l's own mixing; its source columns are the encoder's outputs), l 1-based. */
export function matrices(d, choice) {
  const [kind, n] = String(choice).split(":"), l = Number(n) - 1;
  if (kind === "layer" && d.layers.source[l]) return { source: d.layers.source[l], prefix: d.layers.prefix[l] };
  if (kind === "upto" && d.rollout.source[l]) return { source: d.rollout.source[l], prefix: d.rollout.prefix[l] };
  return { source: d.source, prefix: d.prefix };
}

/** The choices of the layer menu for a model of L decoder layers: [value, text]. */
export function layerChoices(L) {
  const out = [["all", "through all layers (composed)"]];
  for (let l = 1; l < L; l++) out.push([`upto:${l}`, `through decoder layers 1–${l}`]);
  for (let l = 1; l <= L; l++) out.push([`layer:${l}`, `decoder layer ${l} alone`]);
  return out;
}

/** The shares of step t as whole percents that add up to 100: {source, prefix} in 0..100. */
export function percents(m, t) {
  const s = m.source[t].reduce((a, b) => a + b, 0), p = m.prefix[t].reduce((a, b) => a + b, 0);
  const source = Math.round((100 * s) / Math.max(1e-9, s + p));
  return { source, prefix: 100 - source };
}

/** The bar "source 72% · prefix 28%" of step t (0-based). */
export function shareBar(m, t) {
  const { source, prefix } = percents(m, t);
  const part = (cls, v) => {
    const span = el("span", { className: `src-bar-${cls}` });
    span.style.width = `${v}%`;
    return span;
  };
  return el("div", { id: "src-share", className: "src-share", "data-source": source, "data-prefix": prefix }, [
    el("div", { id: "src-bar", className: "src-bar", role: "img",
      "aria-label": `source ${source}%, prefix ${prefix}%` }, [part("source", source), part("prefix", prefix)]),
    el("p", { className: "src-bar-text" }, [
      el("span", { className: "src-key-source", text: `source ${source}%` }), " · ",
      el("span", { className: "src-key-prefix", text: `prefix ${prefix}%` }),
    ]),
  ]);
}

/** Step t's row: one cell per source token, then one per decoder input read so far, coloured by
 * contribution on the sequential scale of this row (its largest cell darkest); `tip(cell,
 * lines)` binds the numbers to a cell (tooltip on hover, on tap). */
export function tokenRow(d, m, t, tip) {
  usePalette();
  const src = m.source[t], pre = m.prefix[t].slice(0, t + 1);
  const hi = Math.max(1e-9, ...src, ...pre);
  const cell = (part, i, tok, v) => {
    const rgb = blue(v / hi);
    const c = el("span", { id: `src-cell-${part}-${i + 1}`, className: `src-cell src-${part}`, tabindex: 0,
      "data-value": v, text: tok });
    c.style.background = css(rgb);
    c.style.color = inkOn(rgb);
    const where = part === "source" ? `source token ${i + 1} ${quote(tok)}` : `written token ${i + 1} ${quote(tok)}`;
    tip(c, [where, `contribution ${pct(v)} of step ${t + 1}`]);
    return c;
  };
  return el("div", { id: "src-row", className: "src-row" }, [
    el("span", { className: "src-rowlabel", text: "source" }),
    ...d.src_tokens.map((tok, i) => cell("source", i, tok, src[i])),
    el("span", { className: "src-rowlabel", text: "prefix" }),
    ...pre.map((v, j) => cell("prefix", j, d.prefix_tokens[j], v)),
  ]);
}

/** The map over all steps: rows the steps (the viewer's marked), columns the source tokens, a
 * gap, then the decoder inputs (a prefix token after a row's step is masked). */
export function drawMap(fig, d, m, t, { font, width }) {
  const T = d.prefix_tokens.length, S = d.src_tokens.length, C = S + 1 + T;
  const rows = d.output_tokens.map((tok, i) => ({ index: i, label: `${i + 1}: ${d.prefix_tokens[i]} → ${tok}`,
    current: i === t }));
  const cols = [...d.src_tokens.map((tok) => ({ label: tok })), { label: "" },
    ...d.prefix_tokens.map((tok) => ({ label: `↳${tok}` }))];
  const matrix = new Float32Array(T * C);
  let hi = 0;
  for (let i = 0; i < T; i++) {
    for (let k = 0; k < S; k++) { matrix[i * C + k] = m.source[i][k]; hi = Math.max(hi, m.source[i][k]); }
    matrix[i * C + S] = GAP_VALUE;
    for (let j = 0; j < T; j++) {
      matrix[i * C + S + 1 + j] = j > i ? NaN : m.prefix[i][j];
      if (j <= i) hi = Math.max(hi, m.prefix[i][j]);
    }
  }
  return drawHeatmap(fig, {
    title: `Where each step's word came from · step ${t + 1} of ${T} marked`,
    xTitle: "source tokens, then ↳ the tokens written before (decoder inputs)", yTitle: "step: reads → writes",
    rows, cols, matrix, hi: hi || 1, scaleTitle: "contribution", maxWidth: width, font,
    tip: (r, c) => {
      if (c === S) return null;
      const head = `step ${r + 1} (writes ${quote(d.output_tokens[r])})`;
      if (c < S) return [head, `from source token ${quote(d.src_tokens[c])}: ${pct(m.source[r][c])}`];
      const j = c - S - 1;
      return j > r ? [head, `${quote(d.prefix_tokens[j])} is not written yet at this step`]
        : [head, `from written token ${quote(d.prefix_tokens[j])}: ${pct(m.prefix[r][j])}`];
    },
  });
}

/** DecoderLens: one row per encoder layer, the last the model's translation (marked); rows that
 * already say what the last one says are ticked. */
export function lensTable(d) {
  const rows = d.rows, L = rows.length, final = JSON.stringify(rows[L - 1].ids);
  const body = rows.map((r, i) => {
    const same = JSON.stringify(r.ids) === final, last = i === L - 1;
    return el("tr", { id: `src-lens-${r.layer + 1}`, className: `${last ? "src-final" : ""}${same ? " src-same" : ""}`,
      "data-layer": r.layer + 1, "data-same": String(same) }, [
      el("th", { scope: "row", text: last ? `${r.layer + 1} (all: the model's translation)` : String(r.layer + 1) }),
      el("td", { className: "src-lens-text", text: r.text + (r.finished ? "" : " …") }),
      el("td", { className: "src-lens-same", text: same && !last ? "✓ the same" : "" }),
    ]);
  });
  return el("table", { id: "src-lens-table", className: "at-scores src-lens" }, [
    el("thead", {}, [el("tr", {}, [el("th", { scope: "col", text: "encoder layers read" }),
      el("th", { scope: "col", text: "what the decoder writes" }), el("th", { scope: "col", text: "" })])]),
    el("tbody", {}, body)]);
}

export function lensStatus(d) {
  const f = d.first_layer_like_final, L = d.rows.length;
  const who = "DecoderLens (Langedijk et al. 2024): ";
  if (f === null || f === undefined || f + 1 >= L) {
    return `${who}only the full encoder (${L} layers) gives the final translation.`;
  }
  return `${who}from encoder layer ${f + 1} of ${L} on, the translation no longer changes.`;
}

/** The scored reference, token by token; `whatIf(t)` on a row's button (rows where the
 * model's own choice is another token). */
export function scoreTable(d, whatIf) {
  const first = d.first_divergence;
  const body = d.steps.map((r) => {
    const parts = r.rank > 1, t = r.step;
    const cls = `${parts ? "src-differs" : ""}${t === first ? " src-part" : ""}`;
    const action = parts ? el("button", { id: `src-whatif-${t + 1}`, type: "button", className: "ax-action src-whatif",
      text: "What if? with this token", title: `Open What if? at step ${t + 1} with ${quote(r.token)} forced` }) : null;
    if (action) action.addEventListener("click", () => whatIf(t));
    return el("tr", { id: `src-tok-${t + 1}`, className: cls.trim(), "data-rank": r.rank, "data-prob": r.prob,
      "data-first": String(t === first) }, [
      el("th", { scope: "row", text: String(t + 1) }),
      el("td", { className: "at-tok", text: r.token }),
      el("td", { text: share(r.prob) }),
      el("td", { text: String(r.rank) }),
      el("td", {}, [el("span", { className: "at-tok", text: r.top_token }), ` (${share(r.top_prob)})`]),
      el("td", {}, [...(t === first ? [el("span", { className: "src-parttag", text: "they part here" })] : []),
        ...(action ? [action] : [])]),
    ]);
  });
  return el("table", { id: "src-score-table", className: "at-scores src-scores" }, [
    el("thead", {}, [el("tr", {}, ["step", "reference token", "p", "rank", "model's choice (p)", ""]
      .map((h) => el("th", { scope: "col", text: h })))]),
    el("tbody", {}, body)]);
}

/** The scored reference in one line; `names`: the model's (names.js), whose end token it counts. */
export function scoreStatus(d, names = OURS) {
  const n = d.steps.length;
  const lp = `log p = ${d.log_prob.toFixed(2)} (${d.mean_log_prob.toFixed(2)} per token, `
    + `${n} tokens with ${names.eos})`;
  if (d.first_divergence === null) return `${lp}. The model's own choice at every step: rank 1 everywhere.`;
  const r = d.steps[d.first_divergence];
  return `${lp}. They part at step ${r.step + 1}: `
    + `the reference has ${quote(r.token)} (p ${share(r.prob)}, rank ${r.rank}), `
    + `the model would write ${quote(r.top_token)} (p ${share(r.top_prob)}).`
    + (d.truncated ? " The reference was cut to the decoder's length." : "");
}
