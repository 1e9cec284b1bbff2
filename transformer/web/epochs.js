// Attention across training (issue 9): the main viewer's sentence seen by each training
// snapshot, as small multiples of the view the main viewer shows (same kind, layer, head,
// step, hide-specials), plus each snapshot's own translation and validation scores.
//
// The server traces the snapshots once per (sentence, target) and sends them here
// ("attention-explorer-epochs/1", panels/beam.py); this module keeps every answer, so
// switching epochs or changing the view redraws in the browser with no server call. It asks
// only while its panel is on screen, by clicking the hidden #epoch-load-btn.
// All token text goes in with textContent.

import { decodeArray } from "./payload.js";
import { drawHeatmap } from "./heatmap.js";
import { FUTURE_VALUE, el } from "./draw.js";

export const SCHEMA = "attention-explorer-epochs/1";
const VIEW_NAMES = { cross: "cross-attention", decoder: "decoder self-attention", encoder: "encoder self-attention" };
const CELL = 12; // the smallest cell at which heatmap.js labels every row and column


const keyOf = (src, tgt) => `${src}\u241f${tgt.join("\u241e")}`;
const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));
const headName = (head) => (head === "mean" ? "mean over heads" : head === "max" ? "max over heads" : `head ${Number(head) + 1}`);

/** "validation BLEU 2.01, chrF 15.5, loss 4.33" from a snapshot's scores. */
function scoreText(s) {
  const parts = [];
  if (s.bleu !== undefined) parts.push(`BLEU ${s.bleu}`);
  if (s.chrf !== undefined) parts.push(`chrF ${s.chrf}`);
  if (s.val_loss !== undefined) parts.push(`loss ${Number(s.val_loss).toFixed(2)}`);
  return parts.length ? `validation ${parts.join(", ")}` : "no validation scores saved";
}

/** One snapshot's attention on the sentence, decoded once into Float32Arrays. */
class SnapshotTrace {
  constructor(e) {
    this.src = e.src_tokens;
    this.tgt = e.tgt_tokens;
    this.special = new Set(e.special_tokens);
    this.steps = e.steps;
    this.heads = e.heads;
    this.attn = { encoder: decodeArray(e.attn.encoder), decoder: decodeArray(e.attn.decoder), cross: decodeArray(e.attn.cross) };
  }

  isSpecial(tok) {
    return this.special.has(tok);
  }
}

/** Rows, columns and values of one view of a trace (the viewer's layout, in small). Works on
 * a SnapshotTrace or the main viewer's Trace: both have src, tgt, steps, heads, attn, isSpecial. */
export function viewMatrix(tr, s) {
  const view = VIEW_NAMES[s.view] ? s.view : "cross";
  const t = clamp(s.step - 1, 0, tr.steps - 1);
  const keep = (tokens, n = tokens.length) => tokens.slice(0, n).map((_, i) => i).filter((i) => !(s.hide && tr.isSpecial(tokens[i])));
  let rows, cols;
  if (view === "encoder") {
    rows = keep(tr.src).map((i) => ({ index: i, label: tr.src[i] }));
    cols = rows;
  } else {
    rows = Array.from({ length: tr.steps }, (_, i) => (i <= t
      ? { index: i, label: `${tr.tgt[i + 1]}`, current: i === t }
      : { index: i, label: "", future: true }));
    cols = view === "cross" ? keep(tr.src).map((i) => ({ index: i, label: tr.src[i] }))
      : keep(tr.tgt, tr.steps).map((j) => ({ index: j, label: j <= t ? tr.tgt[j] : "·" }));
  }
  const { shape: [L, H, Q, K], data } = tr.attn[view];
  const layer = clamp(Math.floor(s.layer) || 0, 0, L - 1);
  const hs = s.head === "mean" || s.head === "max" ? null : clamp(parseInt(s.head, 10) || 0, 0, H - 1);
  const out = new Float32Array(rows.length * cols.length), base = layer * H * Q * K;
  rows.forEach((r, ri) => {
    cols.forEach((c, ci) => {
      const o = ri * cols.length + ci;
      if (r.future) { out[o] = FUTURE_VALUE; return; }
      if (view === "decoder" && c.index > r.index) { out[o] = NaN; return; }
      const p = base + r.index * K + c.index;
      if (hs !== null) { out[o] = data[p + hs * Q * K]; return; }
      let acc = s.head === "mean" ? 0 : -Infinity;
      for (let h = 0; h < H; h++) acc = s.head === "mean" ? acc + data[p + h * Q * K] : Math.max(acc, data[p + h * Q * K]);
      out[o] = s.head === "mean" ? acc / H : acc;
    });
  });
  return { view, layer, head: hs === null ? s.head : String(hs), step: t + 1, rows, cols, matrix: out };
}

export class Epochs {
  constructor(host, { loadSelector = null } = {}) {
    this.host = host;
    this.loadSelector = loadSelector;
    this.meta = null; // epochs and scores, known at start-up
    this.data = new Map(); // sentence key -> {snapshots: [{..., trace}], final}
    this.pending = null; // key asked for, until the server answers
    this.selected = "final";
    this.onScreen = false;
    this.lastDrawn = "";
    this.build();
    this.follow();
  }

  build() {
    this.root = el("div", { className: "ep-root" }, [
      el("div", { className: "ep-controls" }, [
        el("label", { className: "ep-field" }, [el("span", { text: "training epoch" }), el("select", { id: "epoch-select" })]),
        el("span", { id: "epoch-status", className: "ep-status" }),
      ]),
      el("p", { id: "epoch-translation", className: "ep-translation" }),
      el("p", { id: "epoch-caption", className: "ep-note" }),
      el("div", { id: "epoch-multiples", className: "ep-multiples" }),
      el("div", { id: "epoch-tooltip", className: "ep-tooltip", role: "tooltip", hidden: true }),
    ]);
    this.host.replaceChildren(this.root);
    const $ = (id) => this.root.querySelector(`#${id}`);
    this.el = { select: $("epoch-select"), status: $("epoch-status"), text: $("epoch-translation"),
      caption: $("epoch-caption"), grid: $("epoch-multiples"), tip: $("epoch-tooltip") };
    this.el.select.addEventListener("change", () => this.select(this.el.select.value));
    // ask the server only while the panel is on screen: visitors who never look cost nothing
    if ("IntersectionObserver" in window) {
      new IntersectionObserver((entries) => {
        this.onScreen = entries.some((e) => e.isIntersecting);
        if (this.onScreen) this.update();
      }).observe(this.root);
    } else this.onScreen = true;
  }

  /** Follow the main viewer: every redraw of it (new sentence, step, view, layer, head) calls
   * update(), coalesced to one per animation frame. The viewer mounts asynchronously. */
  follow() {
    const v = window.attentionExplorer;
    if (!v || !v.on) { setTimeout(() => this.follow(), 200); return; }
    if (!v.epochsFollowing) {
      v.on((type) => { if (type === "render" || type === "load") this.schedule(); });
      v.epochsFollowing = true;
    }
    this.viewer = v;
    this.schedule();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = null; this.update(); });
  }

  /** A value from the server: the start-up list of epochs, or the snapshots' traces. */
  receive(value) {
    let d = value;
    if (typeof d === "string") d = d.trim() ? JSON.parse(d) : null;
    if (!d || d.schema !== SCHEMA) return;
    if (d.meta) { this.setMeta(d); return; }
    this.pending = null;
    if (d.error) { this.status(d.error, "error"); return; }
    const entry = {
      snapshots: d.snapshots.map((s) => ({ ...s, trace: new SnapshotTrace(s) })),
      final: d.final,
    };
    this.data.set(keyOf(d.key[0], d.key[1]), entry);
    const ms = d.snapshots.reduce((a, s) => a + (s.trace_ms || 0), 0);
    this.status(`traced ${d.snapshots.length} snapshots` + (ms ? ` (server ${Math.round(ms)} ms, cached for next time)` : ""));
    this.lastDrawn = "";
    this.update();
  }

  setMeta(d) {
    this.meta = d;
    const opts = d.snapshots.map((s) => [String(s.epoch), `epoch ${s.epoch}`]);
    opts.push(["final", `final model${d.final.epoch ? ` (epoch ${d.final.epoch})` : ""}`]);
    this.el.select.replaceChildren(...opts.map(([v, t]) => el("option", { value: v, text: t })));
    this.el.select.value = this.selected;
    this.update();
  }

  status(text, kind = "") {
    this.el.status.textContent = text;
    this.el.status.className = `ep-status ${kind}`;
  }

  select(value) {
    this.selected = value;
    this.el.select.value = value;
    this.lastDrawn = "";
    this.update();
  }

  /** Redraw for the viewer's current sentence and settings; ask the server if this sentence is new. */
  update() {
    const v = this.viewer, tr = v && v.trace;
    if (!this.meta) return;
    if (!tr) {
      this.el.text.textContent = "Translate a sentence: its attention at each training epoch appears here.";
      this.el.grid.replaceChildren();
      delete this.el.grid.dataset.key;
      this.lastDrawn = "";
      return;
    }
    const key = keyOf(tr.srcText, tr.tgt), entry = this.data.get(key);
    if (!entry) {
      this.el.text.textContent = `Sentence: “${tr.srcText}”. Tracing it with each snapshot…`;
      if (this.onScreen && this.pending !== key) {
        const btn = this.loadSelector && document.querySelector(this.loadSelector);
        if (btn) { this.pending = key; this.status("tracing the snapshots on the server…"); btn.click(); }
      }
      return;
    }
    const s = v.state;
    const drawKey = [key, s.view, s.layer, s.head, s.step, s.hide, this.selected].join("|");
    if (drawKey === this.lastDrawn) return; // nothing this panel shows has changed
    this.lastDrawn = drawKey;
    this.describe(entry, tr);
    this.draw(entry, tr, s, key);
  }

  describe(entry, tr) {
    const snap = entry.snapshots.find((x) => String(x.epoch) === this.selected);
    const which = snap ? `Epoch ${snap.epoch}` : `Final model${entry.final.epoch ? ` (epoch ${entry.final.epoch})` : ""}`;
    const info = snap || entry.final;
    this.el.text.replaceChildren(
      el("strong", { text: `${which}: ` }), `“${info.translation}”`,
      el("span", { className: "ep-scores", text: ` · ${scoreText(info.scores || {})}` }),
    );
    this.el.text.dataset.epoch = this.selected;
  }

  draw(entry, tr, s, key) {
    const items = entry.snapshots.map((x) => ({ id: String(x.epoch), title: `epoch ${x.epoch}`, scores: x.scores, trace: x.trace }));
    items.push({ id: "final", title: entry.final.epoch ? `final (epoch ${entry.final.epoch})` : "final", scores: entry.final.scores, trace: tr });
    const figs = items.map((it) => {
      const m = viewMatrix(it.trace, s);
      const canvas = el("canvas", { role: "img", "aria-label": `${it.title} attention` });
      const fig = el("figure", { className: `ep-fig${it.id === this.selected ? " selected" : ""}`, "data-epoch": it.id }, [canvas]);
      const hit = drawHeatmap(canvas, {
        title: `${it.title}${it.scores && it.scores.bleu !== undefined ? ` · BLEU ${it.scores.bleu}` : ""}`,
        xTitle: "", yTitle: "", rows: m.rows, cols: m.cols, cell: CELL, matrix: m.matrix,
        tip: (r, c) => {
          const row = m.rows[r], col = m.cols[c];
          if (row.future) return [`${it.title}: step ${row.index + 1} not generated yet`];
          const w = m.matrix[r * m.cols.length + c];
          return [`${it.title}`, m.view === "encoder" ? `query: ${row.label}` : `step ${row.index + 1}, emits “${row.label}”`,
            `key: ${col.label}`, w !== w ? "masked (a later position)" : `weight: ${w.toFixed(3)}`];
        },
      });
      canvas.addEventListener("pointermove", (ev) => this.hover(canvas, hit, ev));
      canvas.addEventListener("pointerleave", () => { this.el.tip.hidden = true; });
      fig.addEventListener("click", () => this.select(it.id));
      return fig;
    });
    const m = viewMatrix(tr, s);
    this.el.caption.textContent = `${VIEW_NAMES[m.view]}, layer ${m.layer + 1}, ${headName(m.head)}` +
      (m.view === "encoder" ? "" : `, step ${m.step} of ${tr.steps}`) +
      (VIEW_NAMES[s.view] ? "" : " (the viewer's view has no per-epoch version; showing cross-attention)") +
      ". Click a map to pick its epoch.";
    this.el.grid.replaceChildren(...figs);
    Object.assign(this.el.grid.dataset, { key, view: m.view, layer: m.layer, head: m.head, step: m.step,
      hide: s.hide ? "1" : "0", epochs: String(items.length), selected: this.selected });
  }

  hover(canvas, hit, ev) {
    const r = canvas.getBoundingClientRect(), tip = this.el.tip;
    const lines = hit(ev.clientX - r.left, ev.clientY - r.top);
    if (!lines) { tip.hidden = true; return; }
    tip.replaceChildren(...lines.map((l) => el("div", { text: l })));
    tip.hidden = false;
    tip.style.left = `${Math.max(4, Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4))}px`;
    tip.style.top = `${ev.clientY + 16}px`;
  }
}

/** Build the epoch comparison inside `host`. */
export function mount(host, options) {
  return new Epochs(host, options);
}
