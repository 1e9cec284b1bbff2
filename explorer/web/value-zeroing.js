// Which tokens can the step not do without? Value zeroing (Mohebbi et al. 2023), computed by
// explorer/panels/value_zeroing.py: in one layer, one token's value vectors are zeroed, the layer
// runs again, and how much its output changes at each position is that token's share there
// (rows sum to 1). The panel answers once per sentence, every step, kind and layer; this view
// draws the viewer's step from it:
//
//   the step's row: each source token's share (cross-attention) and each token written before
//     (decoder self-attention), at one layer (it opens on the sharpest) or rolled out;
//   the map of one kind (cross, decoder self, encoder) at that layer, the step's row marked.
//
// Rolled out: the layers' matrices multiplied (no identity: the residual is inside each
// measurement); the source row is the last decoder layer's cross measurement carried back through
// the encoder. Beside "Where did this word come from?" (ALTI+), which splits the same step another
// way. Asked for only while the section is open; all text goes in with textContent.

import { quote } from "./attention.js";
import { el, css, blue, inkOn, usePalette } from "./canvas.js";
import { HeatFigure } from "./frame.js";
import { term } from "./glossary.js";
import { drawHeatmap } from "./heatmap.js";
import { share } from "./numbers.js";
import { Tooltip } from "./tooltip.js";
import { Frames, Requests, watchOpen } from "./view-base.js";

const KINDS = {
  cross: { name: "cross-attention", y: "step (query)", x: "source token zeroed" },
  decoder_self: { name: "decoder self-attention", y: "step (query)", x: "decoder input zeroed" },
  encoder: { name: "encoder self-attention", y: "source token (query)", x: "source token zeroed" },
};

/** The (queries x keys) matrix of `kind` at `layer` ("all": rolled out) as nested rows. */
export function matrixOf(d, kind, layer) {
  if (layer !== "all") return d[kind][Number(layer) - 1];
  if (kind === "cross") return d.cross_rollout[d.cross_rollout.length - 1];
  return kind === "encoder" ? d.encoder_rollout : d.decoder_rollout;
}

/** Step t's shares: {source: [S], prefix: [t + 1]} at `layer`. */
export function stepShares(d, t, layer) {
  return { source: matrixOf(d, "cross", layer)[t], prefix: matrixOf(d, "decoder_self", layer)[t].slice(0, t + 1) };
}

/** The 0-based layer of `cross` (L x T x S nested) whose rows have the lowest mean entropy. */
export function sharpestLayer(cross) {
  const entropy = (row) => -row.reduce((h, p) => (p > 0 ? h + p * Math.log(p) : h), 0);
  const mean = cross.map((rows) => rows.reduce((sum, row) => sum + entropy(row), 0) / rows.length);
  return mean.indexOf(Math.min(...mean));
}

export class ValueZeroingView {
  constructor(host, store, server) {
    this.store = store;
    this.frames = new Frames(() => this.update());
    this.requests = new Requests(store, server);
    this.open = false;
    this.drawn = null;
    this.picked = false; // the visitor picked a layer: kept across sentences
    this.build(host);
    store.subscribe((s, changed) => {
      if (changed.has("sentenceId")) this.drawn = null;
      if (["trace", "step", "theme", "sentenceId"].some((k) => changed.has(k))) this.schedule();
    });
    watchOpen(this.root, (open) => { this.open = open; this.schedule(); });
    this.schedule();
  }

  build(host) {
    this.layer = el("select", { id: "vz-layer", "aria-label": "Which layer" });
    this.kind = el("select", { id: "vz-kind", "aria-label": "Which attention the map shows" },
      Object.entries(KINDS).map(([v, k]) => el("option", { value: v, text: `map: ${k.name}` })));
    this.map = new HeatFigure("vz-map", "value zeroing map");
    this.root = el("div", { id: "vz-root", className: "at-root", "data-state": "idle" }, [
      el("p", { className: "ax-note" }, [
        "Take one token out of one ", term("layer"), " by zeroing its value vectors, run the layer again, "
        + "and see how much its output changes: that token's share (Mohebbi et al. 2023). Unlike attention "
        + "weights this sees the whole layer. Compare with ", term("ALTI+", "alti+"),
        " in “Where did this word come from?” above."]),
      el("p", { id: "vz-what", className: "at-what" }),
      el("div", { className: "ax-controls" }, [this.layer, this.kind]),
      el("p", { id: "vz-status", className: "ax-note", "aria-live": "polite" }),
      el("div", { className: "at-scroll" }, [el("div", { id: "vz-row", className: "src-row" })]),
      this.map.el,
    ]);
    host.replaceChildren(this.root);
    this.tip = new Tooltip("vz-tooltip", this.root);
    this.tip.bind(this.map.canvas, (x, y) => this.hit && this.hit(x, y));
    const redraw = () => { this.drawn = null; this.schedule(); };
    this.layer.addEventListener("change", () => { this.picked = true; redraw(); });
    this.kind.addEventListener("change", redraw);
  }

  schedule() {
    this.frames.schedule();
  }

  update() {
    const s = this.store.get(), tr = s.trace;
    this.root.querySelector("#vz-what").textContent = tr
      ? `Step ${s.step} of ${tr.steps}: reads ${quote(tr.tgt[s.step - 1])}, writes ${quote(tr.tgt[s.step])}.`
      : "Translate a sentence: this section shows which tokens each step of its translation needs.";
    if (!tr) { this.say("idle", "Translate a sentence first."); return; }
    let r = this.requests.get("value_zeroing");
    if (!r && this.open) {
      this.requests.ask("value_zeroing", { action: "value_zeroing" }).then(() => this.schedule());
      r = this.requests.get("value_zeroing");
    }
    if (!r) { this.say("idle", "Open this section to compute it."); return; }
    if (r.status === "pending") { this.say("pending", "Computing with the model… (a layer's run per token)"); return; }
    if (r.status === "error") { this.say("error", `⚠️ ${r.error}`); return; }
    this.draw(s, r.data);
  }

  /** Say `text` in place of a drawing; `state` marks the root for tests. */
  say(state, text) {
    this.root.dataset.state = state;
    const status = this.root.querySelector("#vz-status");
    status.textContent = text;
    status.className = state === "error" ? "ax-error" : "ax-note";
    this.root.querySelector("#vz-row").replaceChildren();
    this.map.clear();
    this.drawn = null;
  }

  /** The layer menu; until the visitor picks one, the layer whose cross-attention rows are
   * sharpest (lowest mean entropy). Rolled out, the encoder's products tend to pool on [SOS] and
   * [EOS], as attention rollout does, so it is an option, not where the view opens. */
  layerMenu(d) {
    const L = d.cross.length;
    if (this.layer.options.length !== L + 1) {
      this.layer.replaceChildren(...Array.from({ length: L },
        (_, l) => el("option", { value: String(l + 1), text: `layer ${l + 1}` })),
      el("option", { value: "all", text: "all layers, rolled out" }));
    }
    if (!this.picked) this.layer.value = String(sharpestLayer(d.cross) + 1);
  }

  draw(s, d) {
    this.layerMenu(d);
    const t = Math.min(s.step, d.tgt_tokens.length) - 1, layer = this.layer.value;
    const sig = `${s.sentenceId}|${t}|${layer}|${this.kind.value}|${s.theme}|${this.root.clientWidth}`;
    this.root.dataset.state = "done";
    if (this.drawn === sig) return;
    this.drawn = sig;
    const { source, prefix } = stepShares(d, t, layer), top = source.indexOf(Math.max(...source));
    const status = this.root.querySelector("#vz-status");
    status.className = "ax-note";
    status.textContent = `Step ${t + 1} (${layer === "all" ? "all layers, rolled out" : `layer ${layer}`}): `
      + `the source token it needs most is ${quote(d.src_tokens[top])} (${share(source[top])} of the change).`;
    this.root.querySelector("#vz-row").replaceChildren(...this.row(d, source, prefix, t));
    this.drawMap(d, t, layer);
    Object.assign(this.root.dataset, { step: String(t + 1), layer, kind: this.kind.value });
  }

  /** The step's chips: source tokens, then the tokens written before, shaded by share. */
  row(d, source, prefix, t) {
    usePalette();
    const hi = Math.max(1e-9, ...source, ...prefix);
    const cell = (part, i, tok, v) => {
      const rgb = blue(v / hi);
      const c = el("span", { id: `vz-cell-${part}-${i + 1}`, className: `src-cell src-${part}`, tabindex: 0,
        "data-value": v, text: tok });
      c.style.background = css(rgb);
      c.style.color = inkOn(rgb);
      const what = part === "source" ? "source token" : "written token";
      this.tip.bind(c, () => [`${what} ${i + 1} ${quote(tok)}`, `${share(v)} of step ${t + 1}'s change`]);
      return c;
    };
    return [el("span", { className: "src-rowlabel", text: "source" }),
      ...d.src_tokens.map((tok, i) => cell("source", i, tok, source[i])),
      el("span", { className: "src-rowlabel", text: "written" }),
      ...prefix.map((v, j) => cell("prefix", j, d.tgt_tokens[j], v))];
  }

  drawMap(d, t, layer) {
    const kind = this.kind.value, k = KINDS[kind], m = matrixOf(d, kind, layer);
    const queries = kind === "encoder" ? d.src_tokens : d.tgt_tokens;
    const keys = kind === "decoder_self" ? d.tgt_tokens : d.src_tokens;
    const matrix = new Float32Array(queries.length * keys.length);
    let hi = 0;
    m.forEach((row, i) => row.forEach((v, j) => {
      const masked = kind === "decoder_self" && j > i; // a later input cannot reach an earlier step
      matrix[i * keys.length + j] = masked ? NaN : v;
      if (!masked) hi = Math.max(hi, v);
    }));
    const narrow = (window.innerWidth || 1000) < 600;
    this.hit = drawHeatmap(this.map, {
      title: `Value zeroing · ${k.name}, ${layer === "all" ? "rolled out" : `layer ${layer}`}`
        + (kind === "encoder" ? "" : ` · step ${t + 1} marked`),
      xTitle: k.x, yTitle: k.y, matrix, hi: hi || 1, scaleTitle: "share",
      rows: queries.map((q, i) => ({ label: kind === "encoder" ? q : `${i + 1}: ${q}`,
        current: kind !== "encoder" && i === t })),
      cols: keys.map((c) => ({ label: c })),
      maxWidth: Math.max(260, (this.root.clientWidth || 800) - 8), font: narrow ? 11 : 13,
      tip: (r, c) => (Number.isNaN(matrix[r * keys.length + c]) ? [`${quote(keys[c])} comes after this step`]
        : [`${k.y} ${quote(queries[r])}`, `zeroing ${quote(keys[c])}: ${share(m[r][c])} of its change`]),
    });
  }
}

export function mount(host, { store, server }) {
  return new ValueZeroingView(host, store, server);
}
