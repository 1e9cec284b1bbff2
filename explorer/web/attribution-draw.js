// Why this word?, the drawing (attribution.js is the view): each analysis's answer as a
// status line and DOM nodes: the layers x heads grids and block row of direct logit
// attribution, the patching maps and the picked head's attention in A and B, and the
// saliency score tables with their bars.
//
// Plain functions of the data (and, for a click, a callback), kept apart from the view so the
// view holds only its state: requests, answers, following the step. All text goes in as text
// (el(..., {text})), never as markup: tokens and sentences are the visitor's.

import { KIND_NAMES, headLabel, quote } from "./attention.js";
import { el, css, diverging, inkOn, usePalette } from "./canvas.js";
import { share, signed } from "./numbers.js";
import { pressable } from "./keys.js";

const GRIDS = [["decoder_self", "self"], ["cross", "cross"]]; // kind, id part

/** A number of nats as a person reads it: "+0.43", "−0.0012", "0" (never "−0.00"). */
export const nats = (x) => signed(x);
/** The same without a "+" on a positive number: for a value rather than a contribution. */
export const plain = (x) => signed(x).replace(/^\+/, "");
const maxAbs = (values) => Math.max(1e-9, ...values.flat(2).map((v) => Math.abs(v)));

/** A cell's colour on the diverging scale of the theme on screen (red, the background at 0, blue =
 * for the word) and an ink that reads on it. */
function paint(cell, v, hi) {
  usePalette();
  const rgb = diverging(Math.max(-1, Math.min(1, v / hi)));
  cell.style.background = css(rgb);
  cell.style.color = inkOn(rgb);
}

/** Tables side by side where they fit, one under the other on a phone; each scrolls in its own box. */
function side(tables) {
  return el("div", { className: "at-grids" }, tables.map((t) => el("div", { className: "at-scroll" }, [t])));
}

/** A layers x heads table of numbers, coloured on ±hi; `cell(l, h, v)` -> {title, text, click, kind}. */
function grid(id, title, values, hi, cell) {
  const H = values[0].length;
  const head = el("tr", {}, [el("th", { scope: "col", text: "layer" }),
    ...Array.from({ length: H }, (_, h) => el("th", { scope: "col", text: `h${h + 1}` }))]);
  const rows = values.map((r, l) => el("tr", {}, [el("th", { scope: "row", text: String(l + 1) }), ...r.map((v, h) => {
    const c = cell(l, h, v);
    const td = el("td", { id: `${id}-${l + 1}-${h + 1}`, tabindex: 0, role: "button", title: c.title, text: c.text,
      "data-value": v, "data-kind": c.kind, "data-layer": l + 1, "data-head": h + 1 });
    paint(td, v, hi);
    td.addEventListener("click", c.click);
    pressable(td, () => c.click());
    return td;
  })]));
  return el("table", { id, className: "at-grid" },
    [el("caption", { text: title }), el("thead", {}, [head]), el("tbody", {}, rows)]);
}

/** One attention row as labelled bars (0..1). */
function bars(id, title, keys, weights) {
  return el("div", { id, className: "at-bars" }, [el("span", { className: "at-bars-title", text: title }),
    ...keys.map((k, i) => {
      const bar = el("span", { className: "at-bar" });
      bar.style.height = `${Math.max(0, Math.min(1, weights[i])) * 100}%`;
      return el("span", { className: "at-barcol", title: `${k}: ${share(weights[i])}`, "data-weight": weights[i] },
        [el("span", { className: "at-bartrack" }, [bar]), el("span", { className: "at-barlabel", text: k })]);
    })]);
}

// --- direct logit attribution -----------------------------------------------------------------
export function dlaStatus(d) {
  const what = d.versus === null ? `logit ${quote(d.token)}` : `logit ${quote(d.token)} − logit ${quote(d.versus)}`;
  return `Step ${d.step + 1}: ${what} = ${plain(d.value)} nats; the terms below add up to ${plain(d.total)}. `
    + "Blue pushes towards the word, red away from it. Click a head to open it in the viewer.";
}

/** The two grids, the blocks row and the note; `open({kind, layer, head})` on a head cell's click. */
export function dlaBody(d, open) {
  const hi = maxAbs([d.decoder_self, d.cross]);
  const grids = GRIDS.map(([kind, part]) => grid(`attr-dla-${part}`, KIND_NAMES[kind], d[kind], hi, (l, h, v) => ({
    title: `${headLabel({ kind, layer: l + 1, head: h + 1 })}: ${nats(v)} nats. Click to open it in the viewer.`,
    text: nats(v), click: () => open({ kind, layer: l + 1, head: h + 1 }), kind,
  })));
  const L = d.ffn.length, blocks = [["embedding + position", d.embedding]];
  for (let l = 0; l < L; l++) blocks.push([`FFN ${l + 1}`, d.ffn[l]]);
  const biases = [...d.decoder_self_bias, ...d.cross_bias].reduce((a, b) => a + b, 0);
  blocks.push(["attention biases", biases], ["final-norm bias", d.norm_bias]);
  // a model with an output bias (Marian's, mBART's final_logits_bias) adds it to every logit
  if (d.logits_bias) blocks.push(["output bias", d.logits_bias]);
  const bhi = maxAbs(blocks.map((b) => b[1]));
  const row = el("tr", {}, blocks.map(([name, v], i) => {
    const td = el("td", { id: `attr-dla-block-${i}`, "data-value": v, title: `${name}: ${nats(v)} nats`,
      text: nats(v) });
    paint(td, v, bhi);
    return td;
  }));
  const table = el("table", { id: "attr-dla-blocks", className: "at-grid at-blocks" }, [
    el("caption", { text: "Blocks (own colour scale)" }),
    el("thead", {}, [el("tr", {}, blocks.map(([name]) => el("th", { scope: "col", text: name })))]),
    el("tbody", {}, [row])]);
  return [side(grids),
    el("div", { className: "at-scroll" }, [table]),
    el("p", { id: "attr-dla-note", className: "at-caption",
      text: `The final LayerNorm is folded in with its scale frozen at this step `
        + `(σ = ${plain(d.norm_sigma)}): each term is centred and divided by this step's σ, `
        + "so the terms add up exactly, but a head's term is what it adds given everything else, "
        + "not what the logit would be without it (knock-out answers that)." })];
}

// --- activation patching ----------------------------------------------------------------------
/** What a patching answer measures: the A-versus-B difference, or (where A and B write the same
 * word, metric "runner-up") A's lead of that word over its runner-up, as the share taken away. */
const byRunnerUp = (d) => d.metric === "runner-up";
const leadWord = (d) => (d.diff_a > 0 ? "lead" : "gap");

export function patchStatus(d) {
  const f = d.fraction, a = quote(d.token_a), b = quote(d.token_b);
  const end = `the embedding ${byRunnerUp(d) ? "takes" : "moves"} ${plain(f.embedding)}, `
    + `everything together ${plain(f.all)}. Click a head to see its attention in A and B.`;
  if (byRunnerUp(d)) {
    const lead = leadWord(d);
    const what = lead === "lead" ? `A's lead of ${a} over its runner-up ${b}`
      : `how far ${a} trails A's top token ${b}`;
    return `Step ${d.step + 1}: A and B both write ${a} here; the maps show how much each head's and FFN's output `
      + `from B moves ${what} (${plain(d.diff_a)} nats in A, ${plain(d.diff_b)} in B). `
      + `Each cell is the share of that ${lead} the component takes away when it takes B's output `
      + `(0 none, 1 all of it: a tie; below 0 a wider ${lead}): ${end}`;
  }
  return `Step ${d.step + 1}: A emits ${a}, B emits ${b}. `
    + `logit ${a} − logit ${b} is ${plain(d.diff_a)} in A and ${plain(d.diff_b)} in B. `
    + "Each cell is the fraction of that difference moved when the component takes B's output "
    + `(0 nothing, 1 all the way to B): ${end}`;
}

/** The two heads maps and the FFN column, on one scale; `pick({kind, layer, head})` on a head cell's click. */
export function patchMaps(d, pick) {
  const f = d.fraction;
  const moves = byRunnerUp(d) ? (v) => `takes away ${plain(v)} of A's ${leadWord(d)}`
    : (v) => `moves ${plain(v)} of the difference`;
  const hi = Math.max(1, maxAbs([f.decoder_self, f.cross, f.ffn]));
  const grids = GRIDS.map(([kind, part]) => grid(`attr-patch-${part}`, KIND_NAMES[kind], f[kind], hi, (l, h, v) => ({
    title: `${headLabel({ kind, layer: l + 1, head: h + 1 })}: ${moves(v)}`,
    text: plain(v), kind,
    click: () => pick({ kind, layer: l + 1, head: h + 1 }),
  })));
  const ffn = el("table", { id: "attr-patch-ffn", className: "at-grid" }, [el("caption", { text: "FFN" }),
    el("thead", {}, [el("tr", {}, [el("th", { text: "layer" }), el("th", { text: "FFN" })])]),
    el("tbody", {}, f.ffn.map((v, l) => {
      const td = el("td", { id: `attr-patch-ffn-${l + 1}`, "data-value": v,
        title: `FFN of layer ${l + 1}: ${moves(v)}`, text: plain(v) });
      paint(td, v, hi);
      return el("tr", {}, [el("th", { scope: "row", text: String(l + 1) }), td]);
    }))]);
  return side([...grids, ffn]);
}

/** The picked head `p` ({kind, layer, head} 1-based, or null)'s attention row at the step, in A
 * (the viewer's trace) and in B (the minimal pairs' trace, when it is this B). */
export function patchRows(s, d, p) {
  const box = el("div", { id: "attr-patch-rows", className: "at-rows" });
  if (!p) return box;
  const view = p.kind === "cross" ? "cross" : "decoder";
  const pair = s.pair && s.pair.status === "done" && s.pair.trace && s.pair.trace.srcText === d.text_b
    ? s.pair.trace : null;
  const one = (name, tr) => {
    if (!tr) {
      return el("p", { className: "ax-note",
        text: `${name}: open “Minimal pairs” and compare this B to see its attention here.` });
    }
    const t = Math.min(d.step, tr.steps - 1); // 0-based step
    const keys = view === "cross" ? tr.src : tr.tgt.slice(0, t + 1);
    const weights = keys.map((_, k) => tr.weight(view, p.layer - 1, p.head - 1, t, k));
    return bars(`attr-patch-row-${name.toLowerCase()}`, `${name}, step ${t + 1}`, keys, weights);
  };
  box.append(el("p", { className: "at-what", text: `${headLabel(p)} at step ${d.step + 1}` }),
    one("A", s.trace), one("B", pair));
  return box;
}

// --- gradient attribution ---------------------------------------------------------------------
export function saliencyStatus(d) {
  const rise = d.logprob - d.baseline_logprob, gap = Math.abs(d.completeness_gap);
  return `Step ${d.step + 1}: log p(${quote(d.token)}) = ${plain(d.logprob)}, and `
    + `${plain(d.baseline_logprob)} with every word's vector at zero (the baseline). `
    + "The integrated-gradients scores add up to within "
    + `${gap < 0.0005 ? "0.001" : plain(gap)} of that difference (${plain(rise)}), with ${d.n_steps} integration steps`
    + `${gap > 0.05 ? "; more steps bring them closer" : ""}.`;
}

/** The source tokens' and the decoder inputs' score tables, each under its Spearman caption. */
export function saliencyBody(d) {
  const a = d.attention_of;
  const where = `layer ${a.layer + 1}, ${a.head === "mean" ? "mean of the heads" : `head ${a.head + 1}`}`;
  const rho = (part) => {
    const r = d[part].spearman, f = (v) => (v === null ? "not defined (fewer than two words)" : plain(v));
    return `Spearman ρ with the attention, over the words: |integrated gradients| ${f(r.integrated_gradients)}, `
      + `|input × gradient| ${f(r.input_x_gradient)}.`;
  };
  return [
    el("p", { id: "attr-sal-rho", className: "at-caption",
      text: `Source tokens, beside cross-attention (${where}). ${rho("src")}` }),
    el("div", { className: "at-scroll" }, [scores("attr-sal-src", d.src, "cross-attention")]),
    el("p", { id: "attr-sal-rho-tgt", className: "at-caption",
      text: `Decoder inputs, beside decoder self-attention (${where}). ${rho("tgt")}` }),
    el("div", { className: "at-scroll" }, [scores("attr-sal-tgt", d.tgt, "self-attention")]),
  ];
}

/** One row per token: its two scores as signed bars, and its attention weight. */
function scores(id, part, attnName) {
  const hi = maxAbs([part.integrated_gradients, part.input_x_gradient]);
  const bar = (v, m, signedBar = true) => {
    const b = el("span", { className: `at-hbar${signedBar && v < 0 ? " neg" : ""}` });
    b.style.width = `${Math.min(1, Math.abs(v) / m) * 100}%`;
    return el("span", { className: "at-htrack" }, [b]);
  };
  const rows = part.tokens.map((tok, i) => el("tr", { "data-token": i }, [
    el("th", { scope: "row", className: "at-tok", title: `token ${i + 1}: ${tok}`, text: `${i + 1} ${tok}` }),
    el("td", {}, [bar(part.integrated_gradients[i], hi), el("span", { text: nats(part.integrated_gradients[i]) })]),
    el("td", {}, [bar(part.input_x_gradient[i], hi), el("span", { text: nats(part.input_x_gradient[i]) })]),
    el("td", {}, [bar(part.attention[i], 1, false), el("span", { text: share(part.attention[i]) })]),
  ]));
  return el("table", { id, className: "at-scores" }, [
    el("thead", {}, [el("tr", {}, ["token", "integrated gradients", "input × gradient", attnName]
      .map((t) => el("th", { scope: "col", text: t })))]),
    el("tbody", {}, rows)]);
}
