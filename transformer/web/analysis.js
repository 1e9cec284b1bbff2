// "Why did it say that?" panel of the Space (panels/analysis.py): head diagnostics maps,
// the knock-out selection, the knock-out result and the head-importance maps.
//
// The server computes, the browser draws: the sentence's head diagnostics arrive in the
// viewer's payload, the test-set diagnostics once with the page (the value of the top
// block), and knock-out / importance come back from one server call each (the Gradio
// buttons #knockout-btn and #importance-btn; web/knockout-*.js and web/importance-*.js
// hand the inputs over and the results back). All text goes in with textContent.
//
// Two gr.HTML blocks mount this module: part "top" (diagnostics + selection chips, above
// the buttons) and part "bottom" (results). Both share the one `panel` object below.

import { drawHeadMap } from "./heatmap.js";
import { drawProbChange } from "./charts.js";
import { headKey, headLabel, KIND_NAMES } from "./viewer.js";
import { el } from "./draw.js";

const KINDS = ["encoder", "decoder_self", "cross"];
const TITLES = { encoder: "Encoder self-attention", decoder_self: "Decoder self-attention", cross: "Cross-attention" };
// measure -> [title, lo, hi, signed]; only the ones a kind has are drawn
const MEASURES = {
  entropy: ["entropy (0 sharp, 1 uniform)", 0, 1, false],
  confidence: ["confidence (mean max weight)", 0, 1, false],
  sink: ["sink share ([SOS] [EOS] punct.)", 0, 1, false],
  prev: ["previous-token share", 0, 1, false],
  same: ["same-token share", 0, 1, false],
  next: ["next-token share", 0, 1, false],
  monotonicity: ["monotonicity (rank corr.)", -1, 1, true],
};


const fmt = (v) => (v === null || v === undefined ? "undefined here" : v.toFixed(3));

const panel = {
  viewer: null,
  testStats: null, // head_stats.json of the checkpoint (whole test set), or null
  source: "sentence", // which diagnostics are shown
  hits: new WeakMap(), // canvas -> hit(x, y) of its last drawing (maps are redrawn as new canvases)
  top: null,
  bottom: null,
  ko: null, // last knock-out result (JSON from the server)
  imp: null, // last head-importance result
  tooltip: null,
};

/** Mount one part of the panel in `host`; `value` of the top part is the test-set stats JSON. */
export function mount(host, part, value) {
  if (!panel.tooltip) {
    panel.tooltip = el("div", { id: "analysis-tooltip", className: "ax-tooltip", role: "tooltip", hidden: true });
    document.body.append(panel.tooltip);
  }
  if (part === "top") buildTop(host, value);
  else buildBottom(host);
  window.axAnalysis = api;
  attachViewer();
}

function buildTop(host, value) {
  try {
    const stats = typeof value === "string" && value.trim() ? JSON.parse(value) : null;
    panel.testStats = stats && stats.kinds ? stats : null;
  } catch (err) {
    console.error("test-set head stats unreadable", err);
    panel.testStats = null;
  }
  const source = el("select", { id: "diag-source", "aria-label": "Diagnostics of" }, [
    el("option", { value: "sentence", text: "this sentence" }),
    el("option", { value: "test", text: panel.testStats ? `whole test set (${panel.testStats.n_sentences} sentences)` : "whole test set" }),
  ]);
  source.addEventListener("change", () => { panel.source = source.value; drawDiagnostics(); });
  const root = el("div", { className: "ax-root ax-analysis" }, [
    el("section", { id: "head-diagnostics", className: "ax-section" }, [
      el("div", { className: "ax-controls" }, [
        el("strong", { text: "Head diagnostics" }),
        el("label", { className: "ax-field", id: "diag-source-field", hidden: !panel.testStats }, [el("span", { text: "of" }), source]),
      ]),
      el("p", { className: "ax-note", text: "One small map per measure: rows are layers, columns heads. Hover a head to read its habit "
        + "(e.g. “previous-token head”); click it to open it in the viewer above; shift-click (or select mode) adds it to the knock-out selection." }),
      el("p", { id: "diag-empty", className: "ax-note", text: "Translate a sentence to see what its heads do." }),
      el("div", { id: "diag-maps" }),
    ]),
    el("section", { className: "ax-section" }, [
      el("div", { className: "ax-tokrow" }, [
        el("span", { className: "ax-label", text: "Heads to knock out" }),
        el("div", { id: "ko-selection", className: "ax-chips" }),
      ]),
    ]),
  ]);
  host.replaceChildren(root);
  panel.top = { root, source, maps: root.querySelector("#diag-maps"), empty: root.querySelector("#diag-empty"),
    selection: root.querySelector("#ko-selection") };
  drawSelection();
}

function buildBottom(host) {
  const root = el("div", { className: "ax-root ax-analysis" }, [
    el("div", { id: "ko-result", className: "ax-section", "aria-live": "polite" }),
    el("div", { id: "head-importance", className: "ax-section" }),
  ]);
  host.replaceChildren(root);
  panel.bottom = { root, ko: root.querySelector("#ko-result"), imp: root.querySelector("#head-importance") };
}

/** The viewer may mount after this panel: wait for it, then follow its sentence and selection. */
function attachViewer() {
  if (panel.viewer) return;
  const v = window.attentionExplorer;
  if (!v || !v.on) { setTimeout(attachViewer, 100); return; }
  panel.viewer = v;
  v.enableSelection();
  v.on((type) => {
    if (type === "load") { // a new sentence: results of the old one would look current, so drop them
      panel.ko = panel.imp = null;
      if (panel.bottom) { panel.bottom.ko.replaceChildren(); delete panel.bottom.ko.dataset.state; panel.bottom.imp.replaceChildren(); delete panel.bottom.imp.dataset.state; }
      drawDiagnostics();
    }
    if (type === "selection") { drawSelection(); drawDiagnostics(); drawImportance(); }
    if (type === "render") markOpen();
  });
  drawDiagnostics();
  drawSelection();
}

// --- tooltips and clicks on the small maps ----------------------------------------------
function bindMap(canvas, kind, onClick) {
  canvas.addEventListener("pointermove", (ev) => {
    const hit = hitAt(canvas, ev), tip = panel.tooltip;
    if (!hit) { tip.hidden = true; return; }
    tip.replaceChildren(...hit.lines.map((l) => el("div", { text: l })));
    tip.hidden = false;
    tip.style.left = `${Math.max(4, Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4))}px`;
    tip.style.top = `${ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 8 : ev.clientY + 16}px`;
  });
  canvas.addEventListener("pointerleave", () => { panel.tooltip.hidden = true; });
  canvas.addEventListener("click", (ev) => {
    const hit = hitAt(canvas, ev);
    if (hit && panel.viewer) onClick({ kind, layer: hit.layer, head: hit.head }, ev);
  });
}

function hitAt(canvas, ev) {
  const fn = panel.hits.get(canvas), r = canvas.getBoundingClientRect();
  return fn ? fn(ev.clientX - r.left, ev.clientY - r.top) : null;
}

const wantsSelect = (ev) => ev.shiftKey || ev.ctrlKey || ev.metaKey || document.querySelector("#select-mode")?.checked;

/** The head shown in the main view, if it shows one head (not mean/max, not rollout). */
function openHeadOf(kind) {
  const v = panel.viewer;
  if (!v || !v.trace) return null;
  const view = { encoder: "encoder", decoder_self: "decoder", cross: "cross" }[kind];
  const s = v.state;
  return s.view === view && s.head !== "mean" && s.head !== "max" ? { layer: s.layer, head: Number(s.head) } : null;
}

function markedOf(kind) {
  const v = panel.viewer;
  return new Set(v ? v.selectedHeads().filter((h) => h.kind === kind).map((h) => `${h.layer}:${h.head}`) : []);
}

/** Redraw the maps' frame around the head open in the viewer (after every view change). */
function markOpen() {
  const open = ["encoder", "decoder_self", "cross"].map((k) => JSON.stringify(openHeadOf(k))).join("|");
  if (open === panel.lastOpen) return;
  panel.lastOpen = open;
  drawDiagnostics();
  drawImportance();
}

// --- head diagnostics ----------------------------------------------------------------------
function drawDiagnostics() {
  const top = panel.top;
  if (!top) return;
  const trace = panel.viewer && panel.viewer.trace;
  const stats = panel.source === "test" && panel.testStats ? panel.testStats : trace && trace.headStats;
  top.empty.hidden = !!stats;
  if (!stats) { top.maps.replaceChildren(); return; }
  const what = stats === panel.testStats ? `the whole test set (${stats.n_sentences} sentences)` : "this sentence";
  top.maps.replaceChildren(...KINDS.filter((k) => stats.kinds[k]).map((kind) => {
    const k = stats.kinds[kind];
    const maps = Object.keys(MEASURES).filter((m) => Array.isArray(k[m])).map((m) => {
      const [title, lo, hi, signed] = MEASURES[m];
      const canvas = el("canvas", { "data-kind": kind, "data-measure": m, role: "img", "aria-label": `${TITLES[kind]}: ${title}` });
      panel.hits.set(canvas, drawHeadMap(canvas, {
        title, values: k[m], lo, hi, signed, cell: 16, marked: markedOf(kind), selected: openHeadOf(kind),
        tip: (l, h) => [
          `${headLabel({ kind, layer: l, head: h })}: ${k.habit ? k.habit[l][h] : "?"}`,
          `${title}: ${fmt(k[m][l][h])} (${what})`,
          ...Object.keys(MEASURES).filter((o) => o !== m && Array.isArray(k[o])).map((o) => `${MEASURES[o][0]}: ${fmt(k[o][l][h])}`),
          "click: open in the viewer · shift-click: select for knock-out",
        ],
      }));
      bindMap(canvas, kind, (h, ev) => {
        if (wantsSelect(ev)) panel.viewer.toggleHead(h);
        panel.viewer.openHead(h);
      });
      return canvas;
    });
    return el("div", { className: "ax-diag-kind", "data-kind": kind }, [
      el("h4", { text: `${TITLES[kind]} (${what})` }), el("div", { className: "ax-maps" }, maps),
    ]);
  }));
  top.maps.dataset.source = stats === panel.testStats ? "test" : "sentence";
}

// --- selection -----------------------------------------------------------------------------
function drawSelection() {
  const top = panel.top;
  if (!top) return;
  const heads = panel.viewer ? panel.viewer.selectedHeads() : [];
  if (!heads.length) {
    top.selection.replaceChildren(el("span", { className: "ax-note", text: "none yet: shift-click heads in the all-heads mosaic, "
      + "the diagnostics maps or the importance maps (or tick “select mode” above the mosaic)" }));
    return;
  }
  top.selection.replaceChildren(...heads.map((h) => {
    const x = el("button", { type: "button", className: "ax-chip-x", "aria-label": `remove ${headLabel(h)}`, text: "×" });
    x.addEventListener("click", () => panel.viewer.toggleHead(h, false));
    return el("span", { className: "chip ax-head-chip", "data-head": headKey(h), title: headLabel(h) },
      [`${headLabel(h)} `, x]);
  }), (() => {
    const b = el("button", { type: "button", className: "ax-chip-clear", text: "clear" });
    b.addEventListener("click", () => panel.viewer.clearSelection());
    return b;
  })());
}

// --- server round trips ----------------------------------------------------------------------
function pending(box, text) {
  if (!box) return;
  box.replaceChildren(el("p", { className: "ax-note", text }));
  box.dataset.state = "pending";
}

function failed(box, message) {
  box.replaceChildren(el("p", { className: "ax-error", text: `⚠️ ${message}` }));
  box.dataset.state = "error";
}

/** The result is for another sentence than the one in the viewer: say so instead of mixing them. */
function stale(data) {
  const tr = panel.viewer && panel.viewer.trace;
  return tr && data.text !== undefined && data.text !== tr.srcText;
}

function showKnockout(data) {
  const box = panel.bottom && panel.bottom.ko;
  if (!box || !data) return;
  if (typeof data === "string") data = JSON.parse(data);
  if (data.error) { failed(box, data.error); return; }
  panel.ko = data;
  const names = data.heads.map(headLabel);
  const same = !data.changed;
  const canvas = el("canvas", { role: "img", "aria-label": "probability of the original token at each step" });
  const fig = el("figure", { className: "ax-fig" }, [el("div", { className: "ax-scroll" }, [canvas])]);
  box.replaceChildren(
    el("p", {}, [el("strong", { text: `Knocked out ${names.length} head${names.length > 1 ? "s" : ""}: ` }), names.join("; ")]),
    ...(stale(data) ? [el("p", { className: "ax-note", text: `(for the sentence “${data.text}”, not the one in the viewer)` })] : []),
    el("div", { className: "ax-ko-pair" }, [
      el("div", { className: "ax-ko-col" }, [el("div", { className: "ax-label", text: "Original" }),
        el("div", { id: "ko-original", className: "ax-ko-text", text: data.original.translation })]),
      el("div", { className: "ax-ko-col" }, [el("div", { className: "ax-label", text: same ? "With those heads silenced (unchanged)" : "With those heads silenced" }),
        el("div", { id: "ko-translation", className: `ax-ko-text${same ? "" : " ax-changed"}`, text: data.knockout.translation })]),
    ]),
    el("p", { className: "ax-note", text: `log p(original translation): ${data.steps.logprob_original.toFixed(2)} with every head, `
      + `${data.steps.logprob_knockout.toFixed(2)} with these heads silenced (teacher-forced on the original; greedy decoding gave the text above).` }),
    fig,
  );
  const hit = drawProbChange(canvas, { tokens: data.steps.token, before: data.steps.p_original, after: data.steps.p_knockout,
    top: data.steps.top_knockout, width: Math.max(320, box.clientWidth - 8) });
  panel.hits.set(canvas, (x, y) => { const lines = hit(x, y); return lines && { lines }; });
  bindMap(canvas, null, () => {});
  box.dataset.state = "done";
}

function drawImportance() {
  const box = panel.bottom && panel.bottom.imp, data = panel.imp;
  if (!box || !data) return;
  let m = 0; // one colour scale for the three kinds, symmetric around 0, so they compare
  for (const k of KINDS) for (const row of data.importance[k]) for (const v of row) m = Math.max(m, Math.abs(v));
  m = m || 1;
  const maps = KINDS.map((kind) => {
    const canvas = el("canvas", { "data-kind": kind, role: "img", "aria-label": `${TITLES[kind]}: head importance` });
    panel.hits.set(canvas, drawHeadMap(canvas, {
      title: TITLES[kind], values: data.importance[kind], lo: -m, hi: m, signed: true, cell: 20,
      marked: markedOf(kind), selected: openHeadOf(kind),
      tip: (l, h) => {
        const d = data.importance[kind][l][h];
        return [headLabel({ kind, layer: l, head: h }), `drop in log p(translation): ${d.toFixed(3)} nats`,
          d > 0 ? "the model needs this head for this translation" : "silencing it does not hurt this translation",
          "click: open in the viewer and select for knock-out"];
      },
    }));
    bindMap(canvas, kind, (h) => { panel.viewer.toggleHead(h, true); panel.viewer.openHead(h); });
    return canvas;
  });
  const ranking = data.ranking.slice(0, 5).map((r) => `${headLabel(r)} (${r.drop.toFixed(2)})`).join("; ");
  box.replaceChildren(
    el("p", {}, [el("strong", { text: "Head importance for this sentence: " }),
      `the drop in log-probability of “${data.translation}” when one head alone is silenced (nats; blue = the head helps, red = the translation gets more likely without it).`]),
    ...(stale(data) ? [el("p", { className: "ax-note", text: `(for the sentence “${data.text}”, not the one in the viewer)` })] : []),
    el("div", { className: "ax-maps" }, maps),
    el("p", { className: "ax-note", text: `Largest drops: ${ranking}. Click a head to open it above and add it to the knock-out selection.` }),
  );
  box.dataset.state = "done";
}

function showImportance(data) {
  const box = panel.bottom && panel.bottom.imp;
  if (!box || !data) return;
  if (typeof data === "string") data = JSON.parse(data);
  if (data.error) { failed(box, data.error); return; }
  panel.imp = data;
  drawImportance();
}

const currentText = (fallback) => (panel.viewer && panel.viewer.trace ? panel.viewer.trace.srcText : fallback || "");

/** The API the Gradio buttons' js= snippets call (web/knockout-*.js, web/importance-*.js). */
const api = {
  /** Inputs of /knockout: the viewer's sentence and the selection as "kind:layer:head, ...". */
  knockoutInputs(text, heads) {
    const sel = panel.viewer ? panel.viewer.selectedHeads() : [];
    pending(panel.bottom && panel.bottom.ko, sel.length ? `Knocking out ${sel.length} head${sel.length > 1 ? "s" : ""} and decoding again…` : "…");
    return [currentText(text), panel.viewer ? sel.map(headKey).join(", ") : heads || ""];
  },
  importanceInputs(text) {
    pending(panel.bottom && panel.bottom.imp, "Silencing each head in turn (one batched pass)…");
    return [currentText(text)];
  },
  showKnockout,
  showImportance,
  kindNames: KIND_NAMES,
};
