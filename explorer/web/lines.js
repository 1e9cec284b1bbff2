// The line view: attention as people know it from bertviz's head view. The queries (the
// target tokens written so far, or the source ones in encoder self-attention) stand in a
// column on the left, the keys (the source tokens, or the target ones read so far) on the
// right, and a line joins a query to each key it looks at: the more weight, the wider and the
// more opaque. Every head has its own colour (Okabe–Ito, numbered swatches), the same in
// every view of the page; the viewer's head setting picks one head, or all of them (mean and
// max), in which case each query draws only its strongest lines, up to 70% of its weight.
//
// The current step's lines are drawn full, earlier steps' faded. Hovering a token (or focusing
// it with the keyboard) shows only its lines, with their weights beside the other column; a
// tap or click pins it, a second one lets go. The columns run down the page, so a phone reads
// it too, with rows tall enough for a finger. Drawn in SVG on a dark card, where the colours
// keep at least 3:1 contrast; every token goes in as text.

import { VIEWS, headIndex } from "./attention.js";
import { el, svg, measurer, fontOf, widest, setup } from "./canvas.js";
import { share } from "./numbers.js";
import { words } from "./glossary.js";
import { namesOf, article } from "./names.js";
import { pressable } from "./keys.js";

export const label = "Lines";
/** One colour per head: Okabe–Ito, black swapped for light grey on the dark card. */
export const HEAD_COLOURS = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#D9D9D9"];
const ROLLOUT_COLOUR = "#56B4E9";
const TOP_SHARE = 0.7; // with every head on show, each query draws its strongest lines up to this share of its weight
const MIN_WEIGHT = 0.02; // lighter lines are not drawn at all
// each column's header, in the names of the model's languages (names.js)
const HEADERS = {
  cross: (n) => [`${n.tgt} written (query)`, `${n.src} (key)`],
  decoder: (n) => [`${n.tgt} read (query)`, `${n.tgt} read (key)`],
  encoder: (n) => [`${n.src} (query)`, `${n.src} (key)`],
  rollout: (n) => [`${n.tgt} written`, n.src],
};

export const headColour = (h) => HEAD_COLOURS[h % HEAD_COLOURS.length];

const CAPTIONS = {
  cross: (n) => words(`Each ${n.tgt} token written so far (left, the `, ["query"],
    `) joined to the ${n.src} tokens it looks at (right, the `, ["keys", "key"], ")."),
  decoder: (n) => words(`Each ${n.tgt} token read so far (left) joined to the earlier ones it looks at (right); `
    + "later ones are hidden by the ", ["mask"], "."),
  encoder: (n) => words(`Each ${n.src} token (left) joined to the ones it looks at (right) while the `, ["encoder"],
    " reads them all at once."),
  rollout: (n) => words(["Rollout", "rollout"],
    `: each step (left) joined to the ${n.src} tokens that feed it, through every `, ["layer"], "."),
};

/** The tokens of each column: [{index (trace), label, current}], queries generated so far only. */
function columns(tr, s, lay) {
  const shown = lay.rows.filter((r) => !r.future);
  const query = (r) => ({ index: r.index, current: !!r.current,
    label: s.view === "encoder" ? tr.src[r.index] : s.view === "decoder" ? tr.tgt[r.index] : tr.tgt[r.index + 1],
    tip: r.tip });
  const keys = lay.cols.filter((c) => !(s.view === "decoder" && c.index >= s.step));
  return { queries: shown.map(query), keys: keys.map((c) => ({ index: c.index,
    label: s.view === "decoder" ? tr.tgt[c.index] : tr.src[c.index], tip: c.tip })) };
}

/** The lines to draw: [{q, k (positions in the columns), head (index or null), w}], strongest last. */
function linesOf(tr, s, cols) {
  const out = [];
  const heads = s.view === "rollout" ? [null]
    : s.head === "mean" || s.head === "max" ? Array.from({ length: tr.heads }, (_, h) => h) : [headIndex(s.head)];
  const K = tr.rollout ? tr.rollout.shape[1] : 0;
  cols.queries.forEach((q, qi) => {
    for (const h of heads) {
      const ws = cols.keys.map((k, ki) => ({ q: qi, k: ki, head: h,
        w: h === null ? tr.rollout.data[q.index * K + k.index]
          : tr.weight(s.view, s.layer - 1, h, q.index, k.index) }));
      ws.sort((a, b) => b.w - a.w);
      let acc = 0;
      for (const x of ws) {
        if (x.w < MIN_WEIGHT || (heads.length > 1 && acc >= TOP_SHARE)) break;
        acc += x.w;
        out.push(x);
      }
    }
  });
  return out.sort((a, b) => a.w - b.w);
}

export class LinePicture {
  /** `ctx`: {store, mark} of the viewer. */
  constructor(slot, ctx) {
    this.ctx = ctx;
    this.slot = slot;
    this.pinned = null; // {side: "q" | "k", i}: the token whose lines stay isolated
    this.hover = null;
    this.swatches = el("div", { id: "line-heads", className: "ln-heads", role: "group", "aria-label": "Heads" });
    this.card = el("div", { id: "attn-lines-card", className: "ln-card" });
    this.note = el("p", { id: "line-note", className: "ax-note" });
    slot.append(this.swatches, this.card, this.note);
    // a hover ends when the pointer leaves the picture, even if the token it entered was redrawn
    // under it (a redraw replaces the token's element, and the old one gets no pointerleave)
    this.card.addEventListener("pointerleave", (ev) => {
      if (ev.pointerType !== "mouse" || !this.hover) return;
      this.hover = null;
      this.render();
    });
    this.swatches.addEventListener("click", (ev) => {
      const b = ev.target.closest && ev.target.closest("button[data-head]");
      if (!b) return;
      const store = ctx.store, now = store.get().head;
      store.set({ head: b.dataset.head === "all" || b.dataset.head === now ? "mean" : b.dataset.head });
    });
  }

  caption(view, s) {
    return CAPTIONS[view](namesOf(s && s.trace));
  }

  clear() {
    this.card.replaceChildren();
    this.swatches.replaceChildren();
    this.note.textContent = "";
    this.pinned = this.hover = null;
    for (const k of Object.keys(this.slot.dataset)) delete this.slot.dataset[k];
  }

  /** Numbered head swatches in their colours; the one on show pressed ("all" for mean and max). */
  drawSwatches(s, tr) {
    if (s.view === "rollout") { this.swatches.replaceChildren(); return; }
    const single = s.head !== "mean" && s.head !== "max";
    const button = (head, text, colour) => {
      const b = el("button", { type: "button", className: "ln-swatch", "data-head": head, text,
        "aria-pressed": String(head === "all" ? !single : s.head === head),
        title: head === "all" ? "Every head, each in its colour" : `Head ${head} alone (again: every head)` });
      if (colour) b.style.setProperty("--ln-colour", colour);
      return b;
    };
    this.swatches.replaceChildren(button("all", `all ${tr.heads} heads`),
      ...Array.from({ length: tr.heads }, (_, h) => button(String(h + 1), String(h + 1), headColour(h))));
  }

  draw(s, tr, lay, size) {
    const key = `${tr.srcText}|${s.view}|${s.layer}|${s.head}|${s.step}|${s.hide}`;
    if (key !== this.drawnKey) { this.pinned = null; this.hover = null; } // isolation belongs to one picture
    this.drawnKey = key;
    this.drawSwatches(s, tr);
    const cols = columns(tr, s, lay), lines = linesOf(tr, s, cols);
    this.shown = { s, tr, cols, lines, size };
    this.render();
    const heads = s.view === "rollout" ? ""
      : s.head === "mean" || s.head === "max" ? `all ${tr.heads} heads, the strongest lines of each` : `head ${s.head}`;
    const named = s.head === "mean" || s.head === "max" ? ", each after its head (h3: head 3)" : "";
    const src = namesOf(tr).src;
    this.note.textContent = s.view === "rollout"
      ? `Each line is how much ${article(src)} ${src} token feeds a step, through every layer. `
        + "Hover or tap a token to see only its lines (a tap pins it)."
      : `${VIEWS[s.view]}, layer ${s.layer}, ${heads}: the wider and brighter a line, the more attention. `
        + `Hover or tap a token to see only its lines and their weights${named}; a tap pins it.`;
    Object.assign(this.slot.dataset, { step: s.step, view: s.view, layer: s.layer, head: s.head, lines: lines.length,
      queries: cols.queries.length, keys: cols.keys.length });
    this.ctx.mark("attn-lines", s);
  }

  /** The SVG for what `draw` chose, with the isolated token (pinned, else hovered) if any. */
  render() {
    const { s, cols, lines, size } = this.shown;
    const n = Math.max(cols.queries.length, cols.keys.length);
    // a long sentence on a wide screen: the type shrinks (not below 14 px) until the rows fit the height
    const font = size.narrow ? size.font : Math.max(14, Math.min(size.font, Math.floor(size.height / n / 1.6)));
    // rows fill the height the main view gives, between a row of text and a finger's width on a touch screen
    const rowH = Math.max(Math.round(font * (size.narrow ? 1.9 : 1.6)), size.touch ? 44 : 0,
      Math.min(Math.floor(size.height / n), 3 * font));
    const head = Math.round(font * 2.2);
    const probe = measurer(fontOf(font));
    const labelW = Math.min(Math.round(size.width * 0.3),
      widest(probe, [...cols.queries, ...cols.keys].map((t) => t.label), 11 * font) + 24);
    const gutter = Math.max(90, Math.min(Math.round(size.width - 2 * labelW - 16), 36 * font));
    const width = 2 * labelW + gutter + 16, height = head + n * rowH + 8;
    const x0 = 8 + labelW, x1 = x0 + gutter, y = (i) => head + (i + 0.5) * rowH;
    const focus = this.pinned || this.hover;
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", class: "ln-svg",
      "aria-label": `${VIEWS[s.view]} as lines at step ${s.step}`, "font-size": font });
    // each column's header starts over its own edge of the card, shortened where the two would meet
    let [left, right] = HEADERS[s.view](namesOf(s.trace));
    probe.font = `bold ${fontOf(font)}`;
    const fits = () => probe.measureText(left).width + probe.measureText(right).width + 40 <= width;
    if (!fits()) [left, right] = [left, right].map((h) => h.replace(/ \(.*\)$/, ""));
    if (!fits()) [left, right] = [left, right].map((h) => h.split(" ")[0]);
    root.append(this.text(left, 8, head * 0.5, "start", "ln-colhead"),
      this.text(right, width - 8, head * 0.5, "end", "ln-colhead"));
    const g = svg("g", { class: "ln-lines" });
    const isolated = (x) => !focus || (focus.side === "q" ? x.q === focus.i : x.k === focus.i);
    const current = cols.queries.findIndex((q) => q.current);
    for (const x of lines) {
      if (!isolated(x)) continue;
      const faded = !focus && s.view !== "encoder" && x.q !== current;
      const colour = x.head === null ? ROLLOUT_COLOUR : headColour(x.head);
      g.append(svg("line", { x1: x0 + 4, y1: y(x.q), x2: x1 - 4, y2: y(x.k), stroke: colour, "stroke-linecap": "round",
        "stroke-width": (1 + 5 * Math.sqrt(x.w)).toFixed(1),
        "stroke-opacity": ((faded ? 0.35 : 1) * Math.min(1, 0.15 + x.w)).toFixed(2),
        "data-q": x.q, "data-k": x.k, "data-head": x.head === null ? "" : x.head + 1 }));
    }
    root.append(g);
    cols.queries.forEach((q, i) => root.append(this.token("q", i, q, x0 - 10, y(i), "end", focus, rowH, labelW)));
    cols.keys.forEach((k, i) => root.append(this.token("k", i, k, x1 + 10, y(i), "start", focus, rowH, labelW)));
    if (focus) this.weights(root, focus, x0, x1, y, font);
    this.card.replaceChildren(root);
    // presenting a sentence too long even for 14 px rows: the current row stays on the screen
    const now = s.presenting && root.querySelector(".ln-tok.current");
    if (now) now.scrollIntoView({ block: "nearest" });
    this.slot.dataset.isolated = focus ? `${focus.side}${focus.i + 1}` : "";
    this.slot.dataset.pinned = this.pinned ? `${this.pinned.side}${this.pinned.i + 1}` : "";
  }

  text(str, x, y, anchor, cls) {
    const t = svg("text", { x, y, "text-anchor": anchor, "dominant-baseline": "central", class: cls });
    t.textContent = str;
    return t;
  }

  /** One token: its label, and a row-high target that isolates it on hover and pins it on a tap. */
  token(side, i, tok, x, yc, anchor, focus, rowH, labelW) {
    const on = focus && focus.side === side && focus.i === i;
    const g = svg("g", { class: `ln-tok${tok.current ? " current" : ""}${on ? " on" : ""}`, tabindex: "0",
      role: "button", "data-side": side, "data-i": i,
      "aria-pressed": String(!!(this.pinned && this.pinned.side === side && this.pinned.i === i)),
      "aria-label": `${tok.tip}: show only its lines` });
    const left = anchor === "end" ? x - labelW + 2 : x - 6;
    g.append(svg("rect", { x: left, y: yc - rowH / 2, width: labelW + 4, height: rowH, rx: 4, class: "ln-hit" }),
      this.text(tok.label, x, yc, anchor, "ln-label"));
    const isolate = (pin) => {
      if (pin) this.pinned = this.pinned && this.pinned.side === side && this.pinned.i === i ? null : { side, i };
      else if (this.hover && this.hover.side === side && this.hover.i === i) return; // a redraw under the pointer
      else this.hover = { side, i };
      this.render();
      if (pin) this.card.querySelector(`g.ln-tok[data-side="${side}"][data-i="${i}"]`)?.focus({ preventScroll: true });
    };
    g.addEventListener("pointerenter", (ev) => { if (ev.pointerType === "mouse") isolate(false); });
    g.addEventListener("pointerleave", (ev) => {
      if (ev.pointerType !== "mouse" || !this.hover || this.hover.side !== side || this.hover.i !== i) return;
      this.hover = null;
      this.render();
    });
    g.addEventListener("click", () => isolate(true));
    pressable(g, () => isolate(true)); // space here pins, it does not start Play
    return g;
  }

  /** The weights of the isolated token's lines, beside the tokens at their other ends: with
   * every head on show, the three largest there, each named by its head ("h3 0.97 · h5 0.41"),
   * on more than one line where one would not fit between the columns. */
  weights(root, focus, x0, x1, y, font) {
    const { s, lines } = this.shown, byEnd = new Map();
    for (const x of lines) {
      if ((focus.side === "q" ? x.q : x.k) !== focus.i) continue;
      const end = focus.side === "q" ? x.k : x.q;
      if (!byEnd.has(end)) byEnd.set(end, []);
      byEnd.get(end).push(x);
    }
    const size = Math.round(font * 0.85), room = x1 - x0 - 16, probe = measurer(`bold ${fontOf(size)}`);
    const named = s.view !== "rollout" && (s.head === "mean" || s.head === "max");
    const g = svg("g", { class: "ln-weights", "font-size": size });
    for (const [end, xs] of byEnd) {
      xs.sort((a, b) => b.w - a.w);
      const rows = [];
      for (const x of xs.slice(0, 3)) {
        const part = named ? `h${x.head + 1} ${share(x.w)}` : share(x.w);
        const joined = rows.length && `${rows.at(-1)} · ${part}`;
        if (joined && probe.measureText(joined).width <= room) rows[rows.length - 1] = joined; else rows.push(part);
      }
      // the last line where a single one stands, just over the token's row; the others above it
      rows.forEach((text, i) => {
        const at = y(end) - font * 0.7 - (rows.length - 1 - i) * size * 1.15;
        g.append(focus.side === "q" ? this.text(text, x1 - 8, at, "end", "ln-w")
          : this.text(text, x0 + 8, at, "start", "ln-w"));
      });
    }
    root.append(g);
  }

  /** The picture on screen as a canvas, for the view's PNG (viewer-export.js): its SVG drawn
   * on the card's colour, with the colours and type the stylesheet gives it written into a
   * copy (an SVG drawn as an image sees no stylesheet). Resolves to null without a picture. */
  image() {
    const root = this.card.querySelector("svg");
    if (!root) return Promise.resolve(null);
    const copy = root.cloneNode(true), w = Number(root.getAttribute("width")), h = Number(root.getAttribute("height"));
    const from = [root, ...root.querySelectorAll("*")], to = [copy, ...copy.querySelectorAll("*")];
    from.forEach((e, i) => {
      const css = getComputedStyle(e);
      for (const p of ["fill", "stroke", "stroke-width", "font-family", "font-size", "font-weight"]) {
        to[i].style.setProperty(p, css.getPropertyValue(p));
      }
    });
    copy.prepend(svg("rect", { width: w, height: h, fill: getComputedStyle(this.card).backgroundColor }));
    const url = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(new XMLSerializer().serializeToString(copy))}`;
    return new Promise((resolve) => {
      const img = new Image();
      img.onload = () => {
        const canvas = document.createElement("canvas");
        setup(canvas, w, h).drawImage(img, 0, 0, w, h);
        resolve(canvas);
      };
      img.onerror = () => resolve(null);
      img.src = url;
    });
  }
}
