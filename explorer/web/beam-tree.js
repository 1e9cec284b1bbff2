// The beam tree: every hypothesis beam search weighed, drawn as SVG from one
// "transformer-beam-tree/1" object (schema in transformer/interpret/beam_tree.py), the store's `beam`.
// One column per output position, each as wide as its longest token, nodes labelled with
// their token, edges as thick as P(token | prefix). The best beam is orange, the greedy path blue and dashed, pruned
// candidates grey, finished hypotheses boxed in green. Zoom, show/hide pruned and hover are
// drawn here with no server call; clicking a finished hypothesis asks the server to trace
// it with its tokens forced and open it in the viewer (explorer/panels/beam.py). The tree
// belongs to its sentence: a new one in the viewer clears it (store.js).
// Token and user text always go in with textContent, never as markup.

import { el, svg, measurer, widest } from "./canvas.js";
import { Tooltip } from "./tooltip.js";
import { words } from "./glossary.js";
import { onKey, pressable } from "./keys.js";
import { watchSize } from "./view-base.js";

/** This view's store keys (store.js registerState) and its part of a link (url.js registerLink).
 * A hypothesis opened in the viewer (origin "beam") keeps the tree it came from. */
export const STATE = {
  sentence: {
    beam: null, // the transformer-beam-tree/1 object on screen
    beamOpened: null, // index of the hypothesis opened in the viewer
  },
  keptBy: "beam",
};
export const LINK = { origin: "beam" }; // a link to a hypothesis re-traces it with its forced ids

export const SCHEMA = "transformer-beam-tree/1";
// Sizes at zoom 1, in css px: the type of the labels and column headings, a node's height and
// its padding beside its label, the rows, the room between columns (for the edges)
const LABEL_PX = 14, NODE_H = 24, NODE_PAD = 6, ROW_H = 30, GAP = 24, PAD = 14, HEAD_H = 20;
const LABEL_FONT = `${LABEL_PX}px "DejaVu Sans Mono", ui-monospace, monospace`;
const MAX_CHARS = 12; // a longer token is cut (its tooltip has it whole)
const ZOOMS = [0.5, 0.67, 0.8, 1, 1.25, 1.5, 2];
// The tree opens scaled to its box's width ("fit"), so a laptop sees all of it. A tree that
// would need less than MIN_FIT, where its labels would be under 12 px (a phone, a long
// sentence), keeps its own size and its box scrolls sideways, from the root. The zoom buttons
// step from there through ZOOMS.
const MIN_FIT = 12 / LABEL_PX;

const fmt = (x, d = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
/** A subword as shown in the tree: as on every chip of the page, ▁ starts a word. */
const shown = (tok) => (tok === null || tok === undefined ? "?" : tok);
/** The root's token: the model's own start token (ours [SOS], a Marian model's <pad>), as the tree names it. */
const start = (root) => root.token || "[SOS]";

export class BeamTree {
  constructor(host, store, server) {
    this.host = host;
    this.store = store;
    this.server = server;
    this.tree = null;
    this.state = { zoom: "fit", pruned: true }; // how the tree is drawn (not part of the sentence)
    this.build();
    this.clear();
    // The sentence in the viewer when beam search was asked for (the Beam button and Enter in
    // the beam-size box are Gradio's, so the asking is heard at the document): a tree that
    // arrives after another sentence came into the viewer belongs to nothing on screen.
    this.askedFor = null;
    const asked = () => { this.askedFor = store.get().sentenceId; };
    document.addEventListener("click", (ev) => { if (ev.target.closest?.("#beam-btn")) asked(); }, true);
    onKey((ev) => { if (ev.key === "Enter" && ev.target.closest?.("#beam-size")) asked(); }, { early: true });
    server.onValue((tree) => {
      const fresh = tree && tree.schema === SCHEMA ? tree : null;
      if (fresh && this.askedFor !== null && this.askedFor !== store.get().sentenceId) return;
      store.set({ beam: fresh, beamOpened: null });
    });
    store.subscribe((s, changed) => {
      if (changed.has("beam")) this.load(s.beam);
      else if (!s.beam && changed.has("origin")) this.clear(); // its message depends on what the viewer shows
      if (changed.has("beamOpened")) this.markOpened(s.beamOpened);
    });
    this.load(store.get().beam);
  }

  build() {
    this.root = el("div", { className: "bt-root" }, [
      el("div", { className: "bt-controls" }, [
        el("button", { id: "beam-zoom-out", type: "button", text: "−", title: "Zoom out", "aria-label": "Zoom out" }),
        el("button", { id: "beam-zoom-in", type: "button", text: "+", title: "Zoom in", "aria-label": "Zoom in" }),
        el("label", { className: "bt-field" }, [
          el("input", { id: "beam-show-pruned", type: "checkbox", checked: true }),
          el("span", { text: "show pruned candidates" }),
        ]),
        el("span", { className: "bt-legend" }, [
          el("span", { className: "bt-key bt-key-best", text: "best beam" }),
          el("span", { className: "bt-key bt-key-greedy", text: "greedy path" }),
          el("span", { className: "bt-key bt-key-pruned", text: "pruned" }),
          el("span", { className: "bt-key bt-key-finished", text: "finished (click to open)" }),
        ]),
      ]),
      el("p", { id: "beam-summary", className: "bt-summary" }),
      el("div", { id: "beam-tree", className: "bt-scroll" }),
      el("ol", { id: "beam-hyps", className: "bt-hyps" }),
    ]);
    this.host.replaceChildren(this.root);
    this.tip = new Tooltip("beam-tooltip", this.root);
    const $ = (id) => this.root.querySelector(`#${id}`);
    this.el = { summary: $("beam-summary"), box: $("beam-tree"), hyps: $("beam-hyps"),
      zin: $("beam-zoom-in"), zout: $("beam-zoom-out"), pruned: $("beam-show-pruned") };
    this.el.zin.addEventListener("click", () => this.zoomBy(+1));
    this.el.zout.addEventListener("click", () => this.zoomBy(-1));
    this.el.pruned.addEventListener("change", () => { this.state.pruned = this.el.pruned.checked; this.render(); });
    // a fitted tree follows its box's width (the panel opening, the window resized)
    let width = 0;
    watchSize(this.el.box, () => {
      const w = this.el.box.clientWidth;
      if (w !== width && this.state.zoom === "fit") this.applyZoom();
      width = w;
    });
  }

  /** The scale at which the tree fits its box's width: at most 1, and 1 where that would be
   * below MIN_FIT (the box scrolls instead). */
  fitZoom() {
    const fit = Math.floor((this.el.box.clientWidth / this.size.w) * 100) / 100;
    return fit >= MIN_FIT && fit < 1 ? fit : 1;
  }

  zoomBy(dir) {
    const z = this.zoom();
    const next = dir > 0 ? ZOOMS.find((x) => x > z + 1e-6) : ZOOMS.findLast((x) => x < z - 1e-6);
    this.state.zoom = next === undefined ? (dir > 0 ? ZOOMS[ZOOMS.length - 1] : ZOOMS[0]) : next;
    this.applyZoom();
  }

  /** The scale the tree is drawn at now. */
  zoom() {
    return this.state.zoom === "fit" ? (this.svg ? this.fitZoom() : 1) : this.state.zoom;
  }

  /** Zoom only rescales the drawing (viewBox), so it costs nothing to redo. */
  applyZoom() {
    const s = this.svg;
    if (!s) return;
    const z = this.zoom();
    s.setAttribute("width", Math.floor(this.size.w * z));
    s.setAttribute("height", Math.round(this.size.h * z));
    this.root.dataset.zoom = String(z);
  }

  /** Draw `tree` (the store's beam), or clear the view when there is none. */
  load(tree) {
    if (!tree) { this.clear(); return; }
    this.tree = tree;
    this.byId = tree.nodes;
    this.hypOf = new Map(tree.hypotheses.map((h, i) => [h.node, i]));
    this.root.classList.remove("bt-is-empty");
    for (const c of this.root.querySelectorAll(".bt-controls button, .bt-controls input")) c.disabled = false;
    this.summary();
    this.list();
    this.render();
  }

  clear() {
    this.tree = null;
    this.svg = null;
    this.root.classList.add("bt-is-empty");
    for (const c of this.root.querySelectorAll(".bt-controls button, .bt-controls input")) c.disabled = true;
    // a beam hypothesis opened from a link comes without its tree (a link holds only the
    // hypothesis's tokens): say so, so the empty panel does not look like a lost result
    const s = this.store.get();
    this.el.summary.replaceChildren(...(s.trace && s.origin === "beam"
      ? ["The viewer shows a beam-search hypothesis opened from a link; links do not keep the tree. "
        + "Press Beam search to draw it again."]
      : words("Run ", ["beam search", "beam"], " to see the tree of hypotheses.")));
    this.el.box.replaceChildren();
    this.el.hyps.replaceChildren();
    this.tip.hide();
    delete this.el.box.dataset.nodes;
  }

  summary() {
    const t = this.tree, best = t.hypotheses[0];
    const same = t.translation === t.greedy_translation;
    this.el.summary.replaceChildren(
      // the sentence it searched: the Beam button reads the text box, which may differ from the viewer's sentence
      el("span", { className: "bt-sentence", text: `Beam search on “${t.src_text}”. ` }),
      el("strong", { text: `Beam size ${t.beam_size}, ${t.steps} steps, ${t.nodes.length - 1} candidates weighed. ` }),
      `Best (score ${fmt(best && best.score)}): “${t.translation}”. `,
      `Greedy (score ${fmt(t.greedy_score)}): “${t.greedy_translation}”. `,
      same ? "Here beam search agrees with greedy decoding." : "Here beam search and greedy decoding part ways.",
      " One column per output position, numbered above it.",
      el("br"),
      el("span", { className: "bt-note",
        text: `score = ${t.score_formula.replace("length_penalty", `α (${t.length_penalty})`)}` }),
    );
  }

  /** The finished hypotheses, best first, as a clickable list (#beam-hyps). */
  list() {
    const t = this.tree;
    this.el.hyps.replaceChildren(...t.hypotheses.map((h, i) => {
      const tags = [i === 0 ? "best" : null, h.node === t.greedy ? "= greedy" : null,
        h.eos ? null : "cut at max length"]
        .filter(Boolean).join(", ");
      const b = el("button", { type: "button", className: "hyp-open", "data-hyp": i,
        title: "Open this hypothesis in the attention viewer" }, [
        el("span", { className: "hyp-text", text: h.text || "(empty)" }),
        el("span", { className: "hyp-meta",
          text: ` score ${fmt(h.score)} · log-prob ${fmt(h.logprob)} · `
            + `${h.length} tokens${tags ? ` · ${tags}` : ""}` }),
      ]);
      b.addEventListener("click", () => this.open(i));
      return el("li", { "data-hyp": i, className: i === 0 ? "best" : "" }, [b]);
    }));
  }

  /** Which nodes to draw: pruned leaves can be hidden, but never a node of the best or greedy path. */
  visible() {
    return this.tree.nodes.filter((n) => this.state.pruned || n.status !== "pruned" || n.on_best || n.on_greedy);
  }

  render() {
    const t = this.tree;
    if (!t) return;
    const nodes = this.visible();
    // columns: one per output position; inside a column the most likely prefix comes first
    const cols = [];
    for (const n of nodes) (cols[n.step] = cols[n.step] || []).push(n);
    const text = (n) => {
      const tok = n.id === 0 ? start(n) : shown(n.token);
      return tok.length > MAX_CHARS ? `${tok.slice(0, MAX_CHARS - 1)}…` : tok;
    };
    // each column as wide as its longest label, so a sentence of short words fits a laptop at a
    // readable size; x: where each column starts
    const probe = measurer(LABEL_FONT), widths = [], xs = [];
    let x = PAD;
    for (let step = 0; step < cols.length; step++) {
      const col = cols[step] || [];
      widths[step] = Math.max(2 * LABEL_PX, widest(probe, col.map(text), 10 ** 4)) + 2 * NODE_PAD;
      xs[step] = x;
      x += widths[step] + GAP;
    }
    const pos = new Map();
    let rows = 1;
    cols.forEach((col, step) => {
      if (!col) return;
      col.sort((a, b) => b.logprob - a.logprob);
      col.forEach((n, i) => pos.set(n.id, { x: xs[step], y: PAD + HEAD_H + i * ROW_H, w: widths[step] }));
      rows = Math.max(rows, col.length);
    });
    const w = x - GAP + PAD, h = PAD * 2 + HEAD_H + rows * ROW_H;
    this.size = { w, h };
    const root = svg("svg", { viewBox: `0 0 ${w} ${h}`, role: "img", "aria-label": "beam search tree" });
    root.style.font = LABEL_FONT; // the font the columns were measured in
    // column headings: the output positions (the summary says so)
    cols.forEach((col, step) => {
      const label = svg("text", { x: xs[step] + widths[step] / 2, y: PAD, class: "bt-colhead",
        "text-anchor": "middle" });
      label.textContent = step === 0 ? "start" : String(step);
      root.append(label);
    });
    const edges = svg("g", { class: "bt-edges" }), overlay = svg("g", { class: "bt-paths" });
    const boxes = svg("g", { class: "bt-nodes" });
    for (const n of nodes) {
      if (n.parent === null || n.parent === undefined || !pos.has(n.parent)) continue;
      const a = pos.get(n.parent), b = pos.get(n.id);
      const x1 = a.x + a.w, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2, mx = (x1 + x2) / 2;
      const d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
      const width = 0.6 + 6 * Math.max(0, Math.min(1, n.prob));
      edges.append(svg("path", { d, class: `bt-edge bt-${n.status}`, "stroke-width": width.toFixed(2) }));
      if (n.on_best) {
        overlay.append(svg("path", { d, class: "bt-edge bt-best", "stroke-width": Math.max(2.5, width).toFixed(2) }));
      }
      if (n.on_greedy) overlay.append(svg("path", { d, class: "bt-edge bt-greedy", "stroke-width": "2" }));
    }
    for (const n of nodes) {
      const p = pos.get(n.id);
      const hyp = this.hypOf.get(n.id);
      const cls = ["bt-node", `bt-${n.status}`, n.on_best ? "on-best" : "", n.on_greedy ? "on-greedy" : "",
        hyp !== undefined ? "hyp" : ""].filter(Boolean).join(" ");
      const g = svg("g", { class: cls, transform: `translate(${p.x},${p.y})`, "data-id": n.id });
      if (hyp !== undefined) {
        g.setAttribute("data-hyp", hyp);
        g.setAttribute("tabindex", "0");
        g.setAttribute("role", "button");
        g.setAttribute("aria-label", `open hypothesis ${hyp + 1}`);
      }
      g.append(svg("rect", { width: p.w, height: NODE_H, rx: 4 }));
      const label = svg("text", { x: p.w / 2, y: NODE_H / 2, "text-anchor": "middle", "dominant-baseline": "central" });
      label.textContent = text(n);
      g.append(label);
      this.tip.bind(g, () => this.lines(n));
      if (hyp !== undefined) {
        g.addEventListener("click", () => this.open(hyp));
        pressable(g, () => this.open(hyp));
      }
      boxes.append(g);
    }
    root.append(edges, overlay, boxes);
    this.svg = root;
    this.el.box.replaceChildren(root);
    this.applyZoom();
    this.el.box.dataset.nodes = String(nodes.length);
    this.el.box.dataset.pruned = this.state.pruned ? "1" : "0";
  }

  /** The path from the root to node n, as text. */
  prefix(n) {
    const toks = [];
    for (let m = n; m && m.parent !== null && m.parent !== undefined; m = this.byId[m.parent]) {
      toks.unshift(m.token || "?");
    }
    return toks.join(" ");
  }

  /** Tooltip lines of node n. */
  lines(n) {
    const hyp = this.hypOf.get(n.id);
    const status = {
      kept: "kept in the beam", pruned: "pruned (did not make the beam)", finished: "finished",
    }[n.status] || n.status;
    return n.id === 0 ? [`${start(n)}: decoding starts here`] : [
      `token “${n.token}” at position ${n.step}`,
      `P(token | prefix) = ${fmt(n.prob, 4)}`,
      `cumulative log-prob = ${fmt(n.logprob)}`,
      n.score !== null && n.score !== undefined ? `score = ${fmt(n.score)} (length-normalised)` : null,
      `${status}${n.rank !== null && n.rank !== undefined ? `, candidate rank ${n.rank + 1}` : ""}`,
      n.on_best ? "on the best beam" : null,
      n.on_greedy ? "on the greedy path" + (n.source === "greedy" ? " (never a beam candidate)" : "") : null,
      `prefix: ${this.prefix(n)}`,
      hyp !== undefined ? `hypothesis ${hyp + 1}: click to open it in the viewer` : null,
    ].filter(Boolean);
  }

  /** Ask the server to trace hypothesis i with its tokens forced and open it in the viewer
   * (the only server call here). */
  open(i) {
    this.store.set({ beamOpened: i });
    this.server.open({ hyp: i });
  }

  markOpened(i) {
    for (const li of this.el.hyps.children) li.classList.toggle("selected", Number(li.dataset.hyp) === i);
  }
}

export function mount(host, { store, server }) {
  return new BeamTree(host, store, server);
}
