// The viewer's main view: the one attention picture a visitor came for, sized for a
// projector. It takes the content width (the candidates stand in a column beside it, under it
// on a phone), its type grows with the screen (at least 14 px on a 1366×900 desktop) and its
// cells with the room the sentence leaves them; the legend stands beside the map. One button
// per picture of pictures.js (the map, the lines) picks how attention is drawn (the store's
// `picture`); a note says why a new sentence opened on the head and step it shows.

import { layout, headName, quote } from "./attention.js";
import { drawTopk } from "./charts.js";
import { el } from "./canvas.js";
import { Figure } from "./frame.js";
import { PICTURES } from "./pictures.js";
import { nextFrame } from "./view-base.js";

const word = (tok) => quote(tok.replace(/▁/g, ""));
const percent = (w) => `${Math.round(100 * w)}%`;

/** Token `i` of `toks` as a caption names it: a whole word as itself, a piece of a word with the
 * word it belongs to ("“y” of “pharmacy”"), so a fragment still reads as part of a story. */
function piece(toks, i) {
  let a = i, b = i + 1;
  while (a > 0 && !toks[a].startsWith("▁") && /^[\p{L}\p{N}]/u.test(toks[a])) a--;
  while (b < toks.length && !toks[b].startsWith("▁") && /^[\p{L}\p{N}]/u.test(toks[b])) b++;
  return b - a > 1 ? `${word(toks[i])} of ${word(toks.slice(a, b).join(""))}` : word(toks[i]);
}

/** The source token cross-attention `layer` (0-based), `head` (0-based) gives most weight at
 * step index `t`: {key, weight}. */
function strongestKey(tr, layer, head, t) {
  let best = { key: 0, weight: -1 };
  for (let k = 0; k < tr.src.length; k++) {
    const w = tr.weight("cross", layer, head, t, k);
    if (w > best.weight) best = { key: k, weight: w };
  }
  return best;
}
// the panel whose section opens beside the picture as its explanation (explorer/panels/arithmetic.py,
// web/arithmetic.js): a side drawer on a wide screen, under the picture on a phone (app.css, arithmetic.js)
export const EXPLAIN_PANEL = "arithmetic-panel";

/** The window's height the picture may take, in css px: the viewport's, less what is docked at
 * its bottom (a lesson card sets the CSS length --ax-dock on the page's root, then sends a
 * window resize, which fits the picture again). */
export function roomHeight() {
  const dock = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--ax-dock")) || 0;
  return Math.max(240, (window.innerHeight || 800) - dock);
}

/** Type size of the main view in css px: large in presentation mode, at least 14 on a desktop. */
export function mainFont(presenting, narrow) {
  const vh = window.innerHeight || 800;
  if (presenting) return Math.max(18, Math.round(vh * 0.024));
  return narrow ? 13 : Math.max(14, Math.min(22, Math.round(vh * 0.018)));
}

export class MainView {
  constructor() {
    this.topk = new Figure("topk", "next-token candidates");
    this.topk.el.setAttribute("data-needs-trace", "");
    this.caption = el("p", { id: "attn-caption", className: "ax-caption" });
    this.note = el("p", { id: "focus-note", className: "ax-focus", hidden: true });
    this.col = el("div", { id: "attn-col", className: "ax-attncol" });
    this.slots = {};
    const buttons = Object.entries(PICTURES).map(([name, p]) => {
      this.slots[name] = name === "map" ? this.col
        : el("div", { id: `attn-${name}`, className: "ax-picture-slot", hidden: true });
      if (name !== "map") this.col.append(this.slots[name]);
      return el("button", { id: `picture-${name}`, type: "button", "data-picture": name, "aria-pressed": "false",
        text: p.label });
    });
    this.picker = el("div", { id: "picture-picker", className: "ax-picker", role: "group",
      "aria-label": "Draw attention as" }, buttons);
    this.explain = el("button", { id: "explain-btn", type: "button", className: "ax-explain-btn",
      "aria-pressed": "false", hidden: true,
      title: "The arithmetic of one row of this map, beside it: click a cell to pick the row",
      text: "Explain a row" });
    // ‖α·f(x)‖ in place of the weight (Kobayashi et al. 2020): the store's `moved`, on a page
    // whose hidden view moved.js asks the server for the norms
    this.moved = el("button", { id: "moved-btn", type: "button", className: "ax-explain-btn", "aria-pressed": "false",
      hidden: true, title: "Draw how much each key moved the output, ‖α·f(x)‖ (Kobayashi et al. 2020), "
        + "in place of the attention weight" },
    // a laptop or a phone says "What moved": the map's buttons then keep to one row (viewer.css)
    ["What moved", el("span", { className: "ax-moved-long", text: " the output" })]);
    // the page's buttons for the whole view (viewer-page.js: Present, the PNG)
    this.tools = el("span", { className: "ax-maintools" });
    this.el = el("section", { id: "main-view", className: "ax-main", "data-needs-trace": true,
      "aria-label": "Attention" }, [
      el("div", { className: "ax-mainhead" }, [this.caption, this.explain, this.moved, this.picker, this.tools]),
      this.note,
      el("div", { className: "ax-toprow" }, [this.col]),
    ]);
    // the candidates: the page puts them in its rail beside the picture (viewer-page.js)
    this.side = el("div", { className: "ax-side" }, [this.topk.el]);
  }

  /** Make the pictures, once the viewer's context (tooltip, hits, marks) exists; `explains`:
   * whether the page has the explanation panel (not in a notebook). */
  mount(ctx, explains) {
    this.ctx = ctx;
    this.explain.hidden = !explains;
    this.explain.addEventListener("click", () => {
      const s = ctx.store.get(), open = (s.open || []).filter((x) => x !== EXPLAIN_PANEL);
      ctx.store.set(s.explain ? { explain: false, open } : { explain: true, open: [...open, EXPLAIN_PANEL] });
    });
    this.hasMoved = "moved" in ctx.store.get();
    this.moved.addEventListener("click", () => ctx.store.set({ moved: !ctx.store.get().moved }));
    this.pictures = Object.fromEntries(Object.entries(PICTURES)
      .map(([name, p]) => [name, new p.Picture(this.slots[name], ctx)]));
    this.picker.addEventListener("click", (ev) => {
      const b = ev.target.closest && ev.target.closest("button[data-picture]");
      if (b) ctx.store.set({ picture: b.dataset.picture });
    });
    ctx.tip.bind(this.topk.canvas, (x, y) => { const hit = ctx.hits.get("topk"); return hit && hit(x, y); });
  }

  /** The explanation beside the picture while the store asks for it and its section is open
   * (closing the section in the drawer ends it). Returns whether it is shown. */
  followExplain(s) {
    const on = !!(s.explain && s.trace && (s.open || []).includes(EXPLAIN_PANEL));
    if (s.explain && !on && s.trace) this.ctx.store.set({ explain: false });
    this.explain.setAttribute("aria-pressed", String(on));
    this.explain.textContent = on ? "Hide the explanation" : "Explain a row";
    const page = document.documentElement, before = page.classList.contains("ax-explaining");
    const narrow = (window.innerWidth || 1000) < 600;
    page.classList.toggle("ax-explaining", on);
    page.classList.toggle("ax-narrow", narrow); // a drawer on the right, or on a phone in the page (app.css)
    // room for the step and head controls beside the picture's caption, left of the drawer (app.css)
    page.classList.toggle("ax-wide", (window.innerWidth || 1000) >= 1100);
    // the picture and its explanation on one screen: the picture goes to the top (on a phone,
    // above it; on a wide screen with the step and head controls beside its caption, app.css);
    // hiding the explanation scrolls the page back to where the visitor had it
    if (on && !before) {
      this.scrolledTo = window.scrollY;
      nextFrame(() => (narrow ? this.col : this.el).scrollIntoView({ block: "start" }));
    } else if (!on && before && this.scrolledTo !== undefined) {
      const top = this.scrolledTo;
      this.scrolledTo = undefined;
      nextFrame(() => window.scrollTo({ top, behavior: "instant" }));
    }
    return on;
  }

  get map() {
    return this.pictures.map;
  }

  clear() {
    for (const p of Object.values(this.pictures)) p.clear();
    this.topk.clear();
    this.caption.replaceChildren();
    this.note.hidden = true;
  }

  /** The room the picture has: {width, height (for its grid), legend (the width the legend
   * beside the map takes), font, narrow, touch, presenting}. The grid's height is what the window leaves
   * under the picture's top once the column labels under it are counted, so the whole map,
   * labels and all, is on the first screen (in presentation mode, on the screen); on a phone,
   * what it leaves with the picture at the top of the screen and the step control under it. A
   * taller map scrolls its rows in its box. */
  size(s) {
    const narrow = (window.innerWidth || 1000) < 600;
    const font = mainFont(s.presenting, narrow);
    if (this.fitted !== this.fitKey(s)) { // measured once per sentence, view and screen (see draw)
      const width = Math.max(260, (this.col.clientWidth || this.el.clientWidth || 800) - 4);
      const height = Math.max(8 * font, this.limit(s) - this.gridTop(s) - (this.below || Math.round(6 * font)) - 6);
      const legend = this.pictures.map.fig.legend.getBoundingClientRect().width;
      this.room = { width, height, legend: legend ? Math.ceil(legend) + 16 : 0 };
    }
    const touch = window.matchMedia ? window.matchMedia("(hover: none)").matches : false;
    return { ...this.room, font, narrow, touch, presenting: !!s.presenting };
  }

  /** A phone's page view (not presentation mode): the picture fits the screen it is brought to. */
  phone(s) {
    return (window.innerWidth || 1000) < 600 && !s.presenting;
  }

  /** How far down the map may reach, in the px gridTop counts in: the window's bottom (less a
   * docked card), on a phone less the legend under the map and the step control under that. */
  limit(s) {
    if (!this.phone(s)) return roomHeight() - 4;
    const bar = this.el.closest(".ax-root")?.querySelector(".ax-stepbar");
    const fig = this.pictures.map.fig, box = fig.scroll.getBoundingClientRect();
    const legend = !fig.el.hidden && box.height ? Math.max(0, this.col.getBoundingClientRect().bottom - box.bottom) : 0;
    return roomHeight() - Math.ceil((bar ? bar.getBoundingClientRect().height : 90) + legend) - 8;
  }

  /** What the fit measured the layout around the picture as: the grid's top and how far down
   * it may reach. The viewer fits the picture again when these move (shifted). */
  layoutKey(s) {
    return `${Math.round(this.gridTop(s))}|${Math.round(this.limit(s))}`;
  }

  /** Whether the layout around the picture moved since the last fit: a notice or a taller
   * translation above it, the line over it coming or going, a card docked under it. */
  shifted(s) {
    return !!(s.trace && this.fitted && this.fitLayout && this.fitLayout !== this.layoutKey(s));
  }

  /** On a phone a new sentence brings its picture to the top of the screen, the step control
   * under it (the picture is fitted to that screen, see limit). */
  bringIntoView(s) {
    if (this.phone(s)) nextFrame(() => this.col.scrollIntoView({ block: "start" }));
  }

  /** What the picture's fit to the window depends on. A step leaves it as it is, so stepping
   * never measures the page: measuring a page a step has just changed would make the browser
   * lay it out again at every click. The viewer calls refit() when the page's layout changed. */
  fitKey(s) {
    return [s.sentenceId, s.presenting, s.explain, s.picture, s.view, s.hide, s.moved, this.note.hidden,
      window.innerWidth, window.innerHeight]
      .join("|");
  }

  refit() {
    this.fitted = null;
  }

  /** Where the picture's grid starts, in css px from the top of the page (of the presentation
   * screen while presenting), as if scrolled to the top; on a phone, from the top of the
   * picture's column. */
  gridTop(s) {
    const fig = this.pictures.map.fig, box = fig.scroll.getBoundingClientRect();
    // the map's box (its canvas scrolls inside it), or (while another picture shows) the column
    // it stands in and a caption's height
    const top = !fig.el.hidden && box.height > 0 ? box.top : this.col.getBoundingClientRect().top + 30;
    return top + this.origin(s) + 4;
  }

  /** What turns a top on screen into the top the fit counts from: the page's (or the
   * presentation screen's) scroll, as if scrolled to the top; while the explanation stands
   * beside the picture, the main view's own top, which the page scrolls to (followExplain); on a
   * phone the picture's column's top, which the page brings to the top of the screen. */
  origin(s) {
    if (this.phone(s)) return -this.col.getBoundingClientRect().top;
    if (!s.presenting && document.documentElement.classList.contains("ax-explaining")) {
      return -this.el.getBoundingClientRect().top;
    }
    return s.presenting ? this.el.closest(".ax-root").scrollTop : window.scrollY;
  }

  draw(s, tr) {
    const name = PICTURES[s.picture] ? s.picture : "map";
    for (const b of this.picker.children) b.setAttribute("aria-pressed", String(b.dataset.picture === name));
    for (const [n, slot] of Object.entries(this.slots)) if (n !== "map") slot.hidden = n !== name;
    this.pictures.map.fig.el.hidden = name !== "map";
    this.moved.hidden = !this.hasMoved || name !== "map" || s.view === "rollout";
    this.moved.setAttribute("aria-pressed", String(!!s.moved));
    const picture = this.pictures[name];
    this.caption.replaceChildren(...picture.caption(s.view, s)); // the map says so when it draws what moved
    this.focusNote(s, tr);
    if (!s.presenting) this.drawTopk(s, tr);
    const lay = layout(tr, s);
    picture.draw(s, tr, lay, this.size(s));
    if (this.fitted !== this.fitKey(s)) {
      // the drawing measured what stands under the grid: draw again until the whole map fits (a
      // new sentence, view, screen or presentation mode changes it; a step does not)
      for (let i = 0; name === "map" && i < 3 && this.learnBelow(s); i++) picture.draw(s, tr, lay, this.size(s));
      this.fitted = this.fitKey(s);
      this.fitLayout = this.layoutKey(s);
    }
    this.el.dataset.picture = name;
  }

  /** The height under the map's grid (its column labels), from the last drawing; true when the
   * map runs past the bottom of the window, or leaves room unused, so that it should be drawn
   * again. */
  learnBelow(s) {
    const fig = this.pictures.map.fig, hit = this.ctx.hits.get("attn-plot"), g = hit && hit.geometry;
    const rect = fig.canvas.getBoundingClientRect();
    if (!g || !rect.height) return false;
    // pinned column labels (a map taller than its room) stand in their own strip under the rows
    const end = g.pinned ? fig.cols.getBoundingClientRect() : rect;
    const below = g.pinned ? end.height + 8 : Math.ceil(rect.height - g.top - g.rows * g.cell);
    const over = Math.max(0, Math.ceil(end.bottom + this.origin(s) - this.limit(s)));
    // drawn again only when the map runs past the window, or leaves a strip of it unused
    const changed = over > 0 || (this.below || 0) - below > 24;
    this.below = below + over;
    this.fitted = null; // measure the room again for the next drawing
    return changed;
  }

  drawTopk(s, tr) {
    // in the rail beside the picture (viewer-page.js), in the rail's type size
    const narrow = (window.innerWidth || 1000) < 600, t = s.step - 1, font = narrow ? 11 : 14;
    const room = this.side.clientWidth || this.el.clientWidth || 800;
    const width = Math.min(Math.round(font * 20), Math.max(240, room - 4));
    // a phone shows the five most likely (What if? lists all of them)
    const cands = narrow ? tr.topk(t).slice(0, 5) : tr.topk(t);
    this.topk.setCaption(narrow ? "Next-token candidates (top 5)" : "Next-token candidates (probabilities)");
    this.ctx.hits.set("topk", drawTopk(this.topk.canvas, { cands, emitted: tr.tgt[t + 1], width, font }));
    this.topk.el.dataset.step = String(t + 1);
  }

  /** Why a new sentence opened where it did, while the picture still shows that head, and what
   * that head does at the step on screen: the word it writes and the source word given the
   * largest share of its attention, said as a share ("86% of its attention"), at the step shown. */
  focusNote(s, tr) {
    const f = s.focus, on = f && s.view === "cross" && s.layer === f.layer && s.head === String(f.head);
    const over = f && (f.source === "test" ? `over ${f.n.toLocaleString("en")} test sentences` : "in this sentence");
    const why = f && `layer ${f.layer}, ${headName(String(f.head))}, the sharpest reader of ${tr.names.src} words `
      + `(${over})`;
    // a visitor who had picked a view keeps it for the next sentence: say so, and where the focus is
    const kept = f && f.kept && !on && !s.presenting;
    this.note.hidden = !on && !kept;
    if (kept) {
      this.note.textContent = `Kept the view you picked. This sentence would open on ${why}`
        + `${f.key === null ? "" : `, at step ${f.step}`}.`;
      return;
    }
    if (!on) return;
    if (f.key === null) { // no step writes a word while looking at one (unknown characters, say)
      this.note.textContent = `Opened on ${why}.`;
      return;
    }
    const t = s.step - 1, look = strongestKey(tr, f.layer - 1, f.head - 1, t);
    const at = `At step ${s.step}, writing ${piece(tr.tgt, s.step)}, it gives ${percent(look.weight)} of its attention `
      + `to ${piece(tr.src, look.key)}.`;
    this.note.textContent = s.step === f.step ? `Opened on ${why}. ${at}`
      : `${why.charAt(0).toUpperCase()}${why.slice(1)}, opened at step ${f.step}. ${at}`;
  }
}
