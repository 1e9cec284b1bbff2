// Attention across training: the viewer's sentence seen by each training snapshot, as small
// multiples of the view the viewer shows (same kind, layer, head, step, hide-specials),
// plus each snapshot's own translation and validation scores.
//
// The server traces the snapshots once per (sentence, target) and sends their attention
// (explorer/panels/epochs.py; each snapshot's trace is the attention part of the payload,
// read by the same decoder as the viewer's). The store keeps every answer, so switching
// epochs or changing the view redraws in the browser with no server call. This view asks
// once its section is open, on screen or not (opening it is the asking). Everything shown
// is derived from the store: with no sentence in the viewer (before the first one, after an
// error) the panel is empty, captions and status included. All token text goes in with
// textContent.

import { readTrace } from "./payload.js";
import { layout, attentionMatrix, headIndex, headName } from "./attention.js";
import { drawHeatmap } from "./heatmap.js";
import { HeatFigure } from "./frame.js";
import { el } from "./canvas.js";
import { Tooltip } from "./tooltip.js";
import { count, finalEpoch, weight as weightText } from "./numbers.js";
import { Frames, watchOpen } from "./view-base.js";

/** This view's store keys (store.js registerState), kept across sentences. */
export const STATE = {
  global: {
    epochs: null, // {meta, data: Map key -> entry, pending: key | null}: snapshots of training
    epoch: "final", // the training snapshot picked in the epoch comparison
  },
};

export const SCHEMA = "attention-explorer-epochs/1";
const VIEW_NAMES = { cross: "cross-attention", decoder: "decoder self-attention", encoder: "encoder self-attention" };
// labels of 12 px (readable on a laptop and a phone) in cells a little higher, so that every
// row and column keeps its label; the tooltip gives each cell's weight
const FONT_PX = 12, CELL = 14;
const DRAWN_BY = ["trace", "step", "view", "layer", "head", "hide", "epoch", "epochs", "theme"];

/** The cache key of a sentence and the target tokens it was traced with. */
const keyOf = (tr) => `${tr.srcText}\u241f${tr.tgt.join("\u241e")}`;

/** "validation BLEU 2.01, chrF 15.5, loss 4.33" from a snapshot's scores. */
function scoreText(s) {
  const parts = [];
  if (s.bleu !== undefined) parts.push(`BLEU ${s.bleu}`);
  if (s.chrf !== undefined) parts.push(`chrF ${s.chrf}`);
  if (s.val_loss !== undefined) parts.push(`loss ${Number(s.val_loss).toFixed(2)}`);
  return parts.length ? `validation ${parts.join(", ")}` : "no validation scores saved";
}

export class Epochs {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.frames = new Frames(() => this.update()); // schedule(): drawn once in the next frame
    this.open = false; // is the section open (the view has a size)?
    this.lastDrawn = "";
    this.build(host);
    const meta = server.data && server.data.schema === SCHEMA ? server.data : null;
    store.set({ epochs: { meta, data: new Map(), pending: null, error: null } });
    this.options(meta);
    server.onValue((answer) => this.receive(answer));
    store.subscribe((s, changed) => { if (DRAWN_BY.some((k) => changed.has(k))) this.schedule(); });
    // ask the server only once the section is open: visitors who never open it cost nothing.
    // A closed accordion hides the view (no size), so open or closed is read from its size.
    watchOpen(this.root, (open) => { this.open = open; this.schedule(); });
    this.schedule();
  }

  build(host) {
    this.select = el("select", { id: "epoch-select" });
    this.select.addEventListener("change", () => this.store.set({ epoch: this.select.value }));
    this.root = el("div", { className: "ep-root" }, [
      el("div", { className: "ep-controls" }, [
        el("label", { className: "ep-field" }, [el("span", { text: "training epoch" }), this.select]),
        el("span", { id: "epoch-status", className: "ep-status" }),
      ]),
      el("p", { id: "epoch-translation", className: "ep-translation" }),
      el("p", { id: "epoch-caption", className: "ep-note" }),
      el("div", { id: "epoch-multiples", className: "ep-multiples" }),
    ]);
    host.replaceChildren(this.root);
    this.tip = new Tooltip("epoch-tooltip", this.root);
    this.el = {};
    for (const e of this.root.querySelectorAll("[id]")) this.el[e.id] = e;
  }

  options(meta) {
    if (!meta) return;
    const opts = meta.snapshots.map((s) => [String(s.epoch), `epoch ${s.epoch}`]);
    const epoch = finalEpoch(meta.final);
    opts.push(["final", `final model${epoch ? ` (${epoch})` : ""}`]);
    this.select.replaceChildren(...opts.map(([v, t]) => el("option", { value: v, text: t })));
    this.select.value = this.store.get().epoch;
  }

  /** The server's answer: the snapshots' traces of one sentence, or {key, error}. */
  async receive(a) {
    if (!a || a.schema !== SCHEMA) return;
    const key = a.key ? `${a.key[0]}\u241f${a.key[1].join("\u241e")}` : null;
    if (a.error) {
      this.store.set({ epochs: { ...this.store.get().epochs, pending: null, error: { key, message: a.error } } });
      return;
    }
    const traces = await Promise.all(a.snapshots.map((x) => readTrace(x.trace)));
    const e = this.store.get().epochs, data = new Map(e.data); // read after the wait: the store may have moved
    data.set(key, {
      snapshots: a.snapshots.map((x, i) => ({ ...x, trace: traces[i] })),
      final: a.final,
      ms: a.snapshots.reduce((sum, x) => sum + (x.trace_ms || 0), 0),
    });
    // nothing stays pending: a question asked for another sentence while this one ran may have
    // been dropped (Gradio runs one request of an event at a time and lets the next one go), so
    // the next update asks again for a sentence with no answer yet (the server caches its traces)
    this.store.set({ epochs: { ...e, data, pending: null, error: null } });
  }

  /** Redraw once per animation frame at most, however many store changes come in. */
  schedule() {
    this.frames.schedule();
  }

  /** Show the store's sentence and settings; ask the server when this sentence is new. */
  update() {
    const s = this.store.get(), tr = s.trace, e = s.epochs;
    if (!e || !e.meta) return;
    if (!tr) { this.empty("Translate a sentence: its attention at each training epoch appears here.", ""); return; }
    const key = keyOf(tr), entry = e.data.get(key);
    if (!entry) {
      const failed = e.error && e.error.key === key ? e.error.message : null;
      if (!failed && this.open && e.pending !== key) {
        this.store.set({ epochs: { ...e, pending: key, error: null } });
        this.server.ask({ sentenceId: s.sentenceId });
        return; // the store change schedules the next update
      }
      this.empty(`Sentence: “${tr.srcText}”. ${failed ? "" : "Tracing it with each snapshot…"}`,
        failed ? `⚠️ ${failed}` : e.pending === key ? "tracing the snapshots on the server…" : "",
        failed ? "error" : "");
      return;
    }
    // how long the server took is for the curious (and the benchmarks): an attribute, not text
    this.status(`${count(entry.snapshots.length, "training snapshot")} and the final model`);
    if (entry.ms) this.el["epoch-status"].dataset.serverMs = String(Math.round(entry.ms));
    const drawKey = [key, s.view, s.layer, s.head, s.step, s.hide, s.epoch, s.theme].join("|");
    if (drawKey === this.lastDrawn) return; // nothing this panel shows has changed
    this.lastDrawn = drawKey;
    this.describe(entry, s.epoch);
    this.draw(entry, tr, s, key);
  }

  /** No maps: a line of text and a status, and nothing left from another sentence. */
  empty(text, status, kind = "") {
    this.el["epoch-translation"].textContent = text;
    delete this.el["epoch-translation"].dataset.epoch;
    this.el["epoch-caption"].textContent = "";
    this.el["epoch-multiples"].replaceChildren();
    for (const k of Object.keys(this.el["epoch-multiples"].dataset)) delete this.el["epoch-multiples"].dataset[k];
    this.status(status, kind);
    this.lastDrawn = "";
  }

  status(text, kind = "") {
    this.el["epoch-status"].textContent = text;
    this.el["epoch-status"].className = `ep-status ${kind}`.trim();
    delete this.el["epoch-status"].dataset.serverMs;
  }

  describe(entry, selected) {
    const snap = entry.snapshots.find((x) => String(x.epoch) === selected);
    const epoch = finalEpoch(entry.final);
    const which = snap ? `Epoch ${snap.epoch}` : `Final model${epoch ? ` (${epoch})` : ""}`;
    const info = snap || entry.final, box = this.el["epoch-translation"];
    box.replaceChildren(
      el("strong", { text: `${which}: ` }), `“${info.translation}”`,
      el("span", { className: "ep-scores", text: ` · ${scoreText(info.scores || {})}` }),
    );
    box.dataset.epoch = selected;
    this.select.value = selected;
  }

  draw(entry, tr, s, key) {
    const view = VIEW_NAMES[s.view] ? s.view : "cross"; // rollout has no per-epoch version
    const settings = { view, step: s.step, hide: s.hide };
    const items = entry.snapshots.map((x) => ({ id: String(x.epoch), title: `epoch ${x.epoch}`, scores: x.scores,
      trace: x.trace }));
    const epoch = finalEpoch(entry.final);
    items.push({ id: "final", title: epoch ? `final (${epoch})` : "final", scores: entry.final.scores, trace: tr });
    const layer = Math.min(s.layer, tr.layers(view)), head = headIndex(s.head);
    const figs = items.map((it) => {
      const lay = layout(it.trace, settings, true);
      const matrix = attentionMatrix(it.trace, view, layer - 1, head, lay);
      const fig = new HeatFigure(undefined, `${it.title} attention`, { png: false, legend: false });
      fig.el.classList.add("ep-fig");
      if (it.id === s.epoch) fig.el.classList.add("selected");
      fig.el.dataset.epoch = it.id;
      const hit = drawHeatmap(fig, {
        title: `${it.title}${it.scores && it.scores.bleu !== undefined ? ` · BLEU ${it.scores.bleu}` : ""}`,
        xTitle: "", yTitle: "", rows: lay.rows, cols: lay.cols, cell: CELL, font: FONT_PX, matrix, maxWidth: 10 ** 6,
        tip: (r, c) => {
          const row = lay.rows[r], col = lay.cols[c];
          if (row.future) return [`${it.title}: step ${row.index + 1} not generated yet`];
          const w = matrix[r * lay.cols.length + c];
          return [`${it.title}`,
            view === "encoder" ? `query: ${row.label}` : `step ${row.index + 1}, emits “${row.label}”`,
            `key: ${col.label}`, w !== w ? "masked (a later position)"
              : `weight: ${weightText(w, it.trace.zeroBound(view, layer - 1, head, row.index))}`];
        },
      });
      this.tip.bind(fig.canvas, (x, y) => hit(x, y));
      fig.canvas.dataset.grid = JSON.stringify(hit.geometry);
      fig.el.addEventListener("click", () => this.store.set({ epoch: it.id }));
      return fig.el;
    });
    this.el["epoch-caption"].textContent = `${VIEW_NAMES[view]}, layer ${layer}, ${headName(s.head)}` +
      (view === "encoder" ? "" : `, step ${s.step} of ${tr.steps}`) +
      (view === s.view ? "" : " (the viewer's view has no per-epoch version; showing cross-attention)") +
      ". Click a map to pick its epoch.";
    this.el["epoch-multiples"].replaceChildren(...figs);
    Object.assign(this.el["epoch-multiples"].dataset, { key, view, layer, head: s.head, step: s.step,
      hide: s.hide ? "1" : "0", epochs: String(items.length), selected: s.epoch });
  }
}

export function mount(host, { store, server }) {
  return new Epochs(host, store, server);
}
