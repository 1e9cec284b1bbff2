// The test set at a glance (explorer/panels/glance.py reads the checkpoint's glance.json): every
// test sentence with its chrF, the model's length-normalised log-probability, the mean source
// share (ALTI+) and cross-attention coverage. The list is asked for when the section opens (not
// with the page); sorting and filtering happen here. A click opens the sentence in the viewer
// as an example does (the block's select event: the page's Translate), and opens "Where did this
// word come from?", whose reference box gets the sentence's test reference. All text goes in
// with textContent.

import { el } from "./canvas.js";
import { namesOf } from "./names.js";
import { watchOpen } from "./view-base.js";

const SHOWN = 100; // rows drawn at once: the rest are a filter or a sort away
const TAIL = 50; // "the worst 50" of a column
const SOURCES_PANEL = "sources-panel";
export const COLUMNS = [
  // key, heading, what it means (in the names of the model's languages, names.js), how to print it
  ["chrf", "chrF", () => "sentence chrF against the reference (0–100)", (v) => v.toFixed(1)],
  ["logprob", "log p", () => "the model's mean log-probability per token of its translation", (v) => v.toFixed(2)],
  ["src_share", "source", (n) => `mean share of each step from the ${n.src} sentence (ALTI+)`,
    (v) => `${Math.round(100 * v)}%`],
  ["coverage", "coverage",
    (n) => `share of ${n.src} word pieces the last layer's cross-attention looked at (≥ 0.5 in total)`,
    (v) => `${Math.round(100 * v)}%`],
];
/** Filters: [value, label, (rows) -> rows]. "The worst 50" of a column are its lowest values. */
export const FILTERS = [
  ["all", "all sentences", (rows) => rows],
  ["chrf", `worst chrF (the ${TAIL} lowest)`, (rows) => lowest(rows, "chrf")],
  ["src_share", `low source share (the ${TAIL} lowest)`, (rows) => lowest(rows, "src_share")],
  ["logprob", `least sure (the ${TAIL} lowest log p)`, (rows) => lowest(rows, "logprob")],
  ["coverage", "words left unread (coverage < 100%)", (rows) => rows.filter((r) => r.coverage < 1)],
];

function lowest(rows, key) {
  return [...rows].sort((a, b) => a[key] - b[key]).slice(0, TAIL);
}

/** `rows` filtered by `filter`, then by `query` (case-blind, in the source, the reference or the
 * model's translation), sorted by `sort` ({key, dir: 1 | -1}); the original order breaks ties. */
export function listed(rows, { filter, query, sort }) {
  const f = FILTERS.find(([v]) => v === filter) || FILTERS[0];
  const q = (query || "").trim().toLowerCase();
  const kept = f[2](rows).filter((r) => !q || [r.src, r.ref, r.hyp].some((x) => x.toLowerCase().includes(q)));
  if (!sort) return kept;
  return [...kept].sort((a, b) => sort.dir * (a[sort.key] - b[sort.key]) || a.index - b.index);
}

export class Glance {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.rows = null; // the file's sentences, each with its index
    this.asked = false;
    this.sort = null;
    this.build(host);
    this.opening = false; // a sentence clicked: "Where did this word come from?" opens when it arrives
    server.onValue((a) => this.receive(a));
    store.subscribe((s, changed) => {
      if (!changed.has("trace") || !this.opening || !s.trace) return;
      this.opening = false;
      const open = (s.open || []).filter((x) => x !== SOURCES_PANEL);
      store.set({ open: [...open, SOURCES_PANEL] });
    });
    watchOpen(this.root, (open) => {
      if (open && !this.asked) { this.asked = true; this.server.ask({ action: "list" }); this.render(); }
    });
  }

  build(host) {
    this.search = el("input", { id: "gl-search", type: "search", className: "at-input",
      placeholder: "e.g. station", "aria-label": "Find a word in the sentences" });
    this.filter = el("select", { id: "gl-filter", "aria-label": "Which sentences" },
      FILTERS.map(([v, t]) => el("option", { value: v, text: t })));
    this.status = el("p", { id: "gl-status", className: "ax-note", "aria-live": "polite",
      text: "The list comes when this section opens." });
    this.body = el("div", { id: "gl-body", className: "at-scroll gl-scroll" });
    this.root = el("div", { className: "at-root gl-root", id: "gl-root", "data-state": "idle" }, [
      el("p", { className: "ax-note", text: "Every sentence of the model's test set, measured once offline: "
        + "sort by a column (click its heading), pick the worst or search, and click a sentence to open it "
        + "in the explorer with its reference." }),
      el("div", { className: "ax-controls" }, [
        el("label", { className: "ax-field" }, [el("span", { text: "show" }), this.filter]),
        el("label", { className: "ax-field at-field" }, [el("span", { text: "find" }), this.search]),
      ]),
      this.status, this.body,
    ]);
    host.replaceChildren(this.root);
    this.filter.addEventListener("change", () => this.render());
    this.search.addEventListener("input", () => this.render());
  }

  receive(a) {
    if (!a || a.action !== "list") return;
    if (a.missing) {
      this.root.dataset.state = "missing";
      this.status.replaceChildren("The test set has not been measured for this model. Run ",
        el("code", { id: "gl-command", text: a.command }), " and restart the app.");
      return;
    }
    this.rows = a.sentences.map((r, index) => ({ ...r, index }));
    this.mean = a.mean;
    this.root.dataset.state = "done";
    this.render();
  }

  /** Sort by `key`: the lowest first (the struggles), again for the highest first. */
  sortBy(key) {
    this.sort = this.sort && this.sort.key === key ? { key, dir: -this.sort.dir } : { key, dir: 1 };
    this.render();
  }

  render() {
    if (!this.rows) {
      if (this.asked && this.root.dataset.state === "idle") this.status.textContent = "Reading the test set…";
      return;
    }
    const rows = listed(this.rows, { filter: this.filter.value, query: this.search.value, sort: this.sort });
    const m = this.mean || {}, n = namesOf(this.store.get().trace);
    this.status.textContent = `${rows.length} of ${this.rows.length} test sentences`
      + (rows.length > SHOWN ? ` (the first ${SHOWN} shown)` : "")
      + (m.chrf !== undefined ? `; over all of them: chrF ${m.chrf.toFixed(1)}, log p ${m.logprob.toFixed(2)}, `
        + `source ${Math.round(100 * m.src_share)}%, coverage ${Math.round(100 * m.coverage)}%.` : ".");
    const head = el("tr", {}, [
      el("th", { scope: "col", text: `${n.src} (click to open) · reference · model` }),
      ...COLUMNS.map(([key, name, what]) => {
        const on = this.sort && this.sort.key === key;
        const b = el("button", { id: `gl-sort-${key}`, type: "button", className: "gl-sort", title: what(n),
          text: `${name}${on ? (this.sort.dir > 0 ? " ▲" : " ▼") : ""}` });
        b.addEventListener("click", () => this.sortBy(key));
        return el("th", { scope: "col", "aria-sort": on ? (this.sort.dir > 0 ? "ascending" : "descending") : "none" },
          [b]);
      }),
    ]);
    const body = rows.slice(0, SHOWN).map((r) => {
      const open = el("button", { id: `gl-open-${r.index}`, type: "button", className: "gl-open", text: r.src,
        title: "Open this sentence in the explorer" });
      open.addEventListener("click", () => this.openSentence(r));
      return el("tr", { id: `gl-row-${r.index}`, "data-index": r.index,
        ...Object.fromEntries(COLUMNS.map(([k]) => [`data-${k.replace("_", "-")}`, r[k]])) }, [
        el("td", { className: "gl-text" }, [open,
          el("span", { className: "gl-ref", text: r.ref }), el("span", { className: "gl-hyp", text: r.hyp })]),
        ...COLUMNS.map(([k, , , fmt]) => el("td", { className: "gl-num", text: fmt(r[k]) })),
      ]);
    });
    this.body.replaceChildren(el("table", { id: "gl-table", className: "at-scores gl-table" },
      [el("thead", {}, [head]), el("tbody", {}, body)]));
  }

  /** Open `r` in the viewer, as an example opens, with "Where did this word come from?" open. */
  openSentence(r) {
    this.opening = true;
    this.server.open({ text: r.src });
    const viewer = document.getElementById("viewer");
    if (viewer) viewer.scrollIntoView({ block: "start" });
  }
}

export function mount(host, { store, server }) {
  return new Glance(host, store, server);
}
