// Minimal pairs, the comparison itself (pairs.js is the view): the two sentences' tokens
// aligned, the candidates of both at their steps, and the difference map B − A.
//
// Shared tokens are found by a longest common subsequence of the two token lists (align),
// so "My brother is tall" and "My sister is tall" line up on everything but the noun. The
// chips mark the tokens only one sentence has. The difference map pairs a word swapped for
// another in the same place (substitute: "brother" with "sister", step 1's "Mio" with "Mia"),
// because that is where a minimal pair differs and what it is for; only a token with no
// counterpart at all becomes a gap. All text goes in as text (el(..., {text}) / textContent).

import { VIEWS, AXES, FUTURE_LABEL, layout, attentionMatrix, analysisMatrix, headIndex } from "./attention.js";
import { drawHeatmap } from "./heatmap.js";
import { el, RDBU_LUT, FUTURE_VALUE, GAP_VALUE } from "./canvas.js";
import { share, signed } from "./numbers.js";

const MIN_SPAN = 0.05; // the difference scale never spans less than ±0.05: noise stays pale
const CHANGED = 0.1; // a candidate whose probability moves this much (or enters / leaves the top-k) is marked

/**
 * Longest-common-subsequence alignment of two token lists: [[i, j], ...] in reading order,
 * 0-based, with i (or j) null for a token only b (or a) has. Within a replaced stretch A's
 * tokens come first. Tokens are compared as strings.
 */
export function align(a, b) {
  const n = a.length, m = b.length;
  const L = Array.from({ length: n + 1 }, () => new Int32Array(m + 1)); // L[i][j]: LCS of a[i:], b[j:]
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) out.push([i++, j++]);
    else if (L[i + 1][j] >= L[i][j + 1]) out.push([i++, null]);
    else out.push([null, j++]);
  }
  while (i < n) out.push([i++, null]);
  while (j < m) out.push([null, j++]);
  return out;
}

/**
 * An alignment with every replaced stretch paired up in order: between two shared tokens,
 * A's k-th unshared token and B's k-th are compared with each other (a word swapped for
 * another); only the tokens left over when one side replaced more stay gaps.
 */
export function substitute(pairs) {
  const out = [];
  let onlyA = [], onlyB = [];
  const flush = () => {
    for (let k = 0; k < Math.max(onlyA.length, onlyB.length); k++) out.push([onlyA[k] ?? null, onlyB[k] ?? null]);
    onlyA = [];
    onlyB = [];
  };
  for (const [i, j] of pairs) {
    if (i !== null && j !== null) { flush(); out.push([i, j]); } else if (i !== null) onlyA.push(i); else onlyB.push(j);
  }
  flush();
  return out;
}

/** The decoding steps (0-based rows) of two traces, aligned on the token each step emits. */
export function alignSteps(tgtA, tgtB, stepsA, stepsB) {
  return align(tgtA.slice(1, stepsA + 1), tgtB.slice(1, stepsB + 1));
}

/** The rows and columns of one view, A's and B's, aligned: {rows, cols}, each a list of
 * [i, j] (trace indices, null = a gap) following align(), swapped words paired (substitute). */
export function alignView(A, B, view) {
  const src = substitute(align(A.src, B.src));
  if (view === "encoder") return { rows: src, cols: src };
  const rows = substitute(alignSteps(A.tgt, B.tgt, A.steps, B.steps));
  return { rows, cols: view === "decoder" ? substitute(align(A.tgt.slice(0, A.steps), B.tgt.slice(0, B.steps))) : src };
}

/**
 * B − A on aligned cells: {matrix, rows, cols, span}. `la`, `lb`: layout() of A and B;
 * `ma`, `mb`: their matrices; `pairs`: alignView(). Rows and columns either side hides (or
 * neither has) are left out; a row or column only one side has is a gap (GAP_VALUE); a
 * cell masked or not generated yet on either side stays so (a row not generated yet
 * stays so even without a counterpart). Each diff row / column is
 * {a, b, label, tip, future, current} with a, b positions in la / lb (or undefined).
 */
export function differenceMap(la, ma, lb, mb, pairs) {
  const where = (list) => new Map(list.map((x, p) => [x.index, p]));
  const side = (aligned, listA, listB) => {
    const pa = where(listA), pb = where(listB), out = [];
    for (const [i, j] of aligned) {
      const a = i === null ? undefined : pa.get(i), b = j === null ? undefined : pb.get(j);
      if (a === undefined && b === undefined) continue;
      out.push({ a, b, i, j, xa: a === undefined ? null : listA[a], xb: b === undefined ? null : listB[b] });
    }
    return out;
  };
  const rows = side(pairs.rows, la.rows, lb.rows), cols = side(pairs.cols, la.cols, lb.cols);
  const CA = la.cols.length, CB = lb.cols.length, C = cols.length, out = new Float32Array(rows.length * C);
  let span = 0;
  rows.forEach((r, y) => {
    cols.forEach((c, x) => {
      let v;
      // a step not generated yet (on either side) shows nothing, even where it has no counterpart
      if ((r.xa && r.xa.future) || (r.xb && r.xb.future)) v = FUTURE_VALUE;
      else if (r.a === undefined || r.b === undefined || c.a === undefined || c.b === undefined) v = GAP_VALUE;
      else {
        const va = ma[r.a * CA + c.a], vb = mb[r.b * CB + c.b];
        if (va === FUTURE_VALUE || vb === FUTURE_VALUE) v = FUTURE_VALUE;
        else if (va !== va || vb !== vb) v = NaN;
        else { v = vb - va; span = Math.max(span, Math.abs(v)); }
      }
      out[y * C + x] = v;
    });
  });
  return { matrix: out, rows, cols, span };
}

/** A label for one aligned row or column of the difference map: the shared token, "A's / B's"
 * for a swapped word, or the token of the one side that has it, marked "−" (only in A) or
 * "+" (only in B). A row of a decoding step is named by its step number(s) and the token it emits. */
function diffLabel(x, A, B, steps) {
  const future = (x.xa && x.xa.future) || (x.xb && x.xb.future);
  const tok = (e, tr, i) => (steps ? `${i + 1}: → ${tr.tgt[i + 1]}` : e.label);
  const both = (a, b) => (a === b ? a : `${a} / ${b}`);
  let label;
  if (x.xa && x.xb) {
    label = steps ? `${x.i + 1}${x.i === x.j ? "" : `/${x.j + 1}`}: → ${both(A.tgt[x.i + 1], B.tgt[x.j + 1])}`
      : both(x.xa.label, x.xb.label);
  } else label = x.xa ? `− ${tok(x.xa, A, x.i)}` : `+ ${tok(x.xb, B, x.j)}`;
  return { label: future ? (steps ? "not generated yet" : FUTURE_LABEL) : label, future: !!future,
    current: !!((x.xa && x.xa.current) || (x.xb && x.xb.current)) };
}

/** The top-k of A and B at their steps, one row per token either has, with the change, into `table`. */
export function drawCandidates(table, A, B, tA, tB) {
  const [caption, thead, tbody] = table.children;
  const ca = A.topk(tA - 1), cb = B.topk(tB - 1);
  const pa = new Map(ca.map((c) => [c.token, c.prob])), pb = new Map(cb.map((c) => [c.token, c.prob]));
  const tokens = [...new Set([...ca, ...cb].map((c) => c.token))]
    .sort((x, y) => Math.max(pb.get(y) || 0, pa.get(y) || 0) - Math.max(pb.get(x) || 0, pa.get(x) || 0))
    .slice(0, Math.max(ca.length, cb.length));
  caption.textContent = tA === tB ? `Candidates at step ${tA}: A against B`
    : `Candidates: A at step ${tA}, B at step ${tB}`;
  thead.replaceChildren(el("tr", {},
    ["token", "p in A", "p in B", "change (B − A)"].map((t) => el("th", { text: t }))));
  const fmt = (p) => (p === undefined ? "not in top-k" : share(p));
  tbody.replaceChildren(...tokens.map((tok) => {
    const a = pa.get(tok), b = pb.get(tok);
    const change = a === undefined ? "enters B's top-k" : b === undefined ? "leaves B's top-k" : signed(b - a);
    const moved = a === undefined || b === undefined || Math.abs(b - a) >= CHANGED;
    const tr = el("tr", { className: moved ? "pr-changed" : "", "data-token": tok }, [
      el("td", { className: "ax-lens-tok", text: tok }),
      el("td", { className: tok === A.tgt[tA] ? "pr-emitted" : "", text: fmt(a),
        title: tok === A.tgt[tA] ? "A emits it" : "" }),
      el("td", { className: tok === B.tgt[tB] ? "pr-emitted" : "", text: fmt(b),
        title: tok === B.tgt[tB] ? "B emits it" : "" }),
      el("td", { className: moved ? (b === undefined || (a !== undefined && b < a) ? "pr-down" : "pr-up") : "",
        text: change }),
    ]);
    return tr;
  }));
  table.dataset.step = String(tA);
}

/** The rows x cols of one view of `tr` (rollout or attention). */
export function viewMatrix(tr, view, layer, head, lay) {
  return view === "rollout" ? analysisMatrix(tr.rollout, lay.rows, lay.cols)
    : attentionMatrix(tr, view, layer, head, lay);
}

/**
 * B − A on the aligned rows and columns, on a diverging scale centred on 0, into `fig` (a
 * HeatFigure), with what it shows said in `note`; `a`, `b`: {lay, matrix} of A and B at their
 * steps. Returns the map's hit-test function.
 */
export function drawDifference(fig, note, width, s, view, A, B, a, b, where) {
  const pairs = alignView(A, B, view);
  const d = differenceMap(a.lay, a.matrix, b.lay, b.matrix, pairs);
  // the scale is the sentence's (both at their last step), so stepping never rescales it
  const last = (tr) => {
    const lay = layout(tr, { view, step: tr.steps, hide: s.hide });
    return { lay, m: viewMatrix(tr, view, s.layer - 1, headIndex(s.head), lay) };
  };
  const fa = last(A), fb = last(B);
  const span = Math.max(MIN_SPAN, differenceMap(fa.lay, fa.m, fb.lay, fb.m, pairs).span);
  const rows = d.rows.map((r) => ({ ...diffLabel(r, A, B, view !== "encoder"), r }));
  const cols = d.cols.map((c) => ({ ...diffLabel(c, A, B, false), c }));
  const gaps = { rows: rows.filter((r) => !r.future && (r.r.a === undefined || r.r.b === undefined)).length,
    cols: cols.filter((c) => c.c.a === undefined || c.c.b === undefined).length };
  const hit = drawHeatmap(fig, {
    title: `Difference B − A · ${VIEWS[view]} · ${where} · step ${s.step}`,
    xTitle: `${AXES[view][1]} (shared)`, yTitle: `${AXES[view][0]} (shared)`, rows, cols, matrix: d.matrix,
    lo: -span, hi: span, lut: RDBU_LUT, scaleTitle: "B − A", maxWidth: width,
    tip: (y, x) => diffTip(rows[y], cols[x], d.matrix[y * cols.length + x], a, b),
  });
  const swapped = cols.filter((c) => c.c.xa && c.c.xb && c.c.xa.label !== c.c.xb.label && !c.c.xa.future)
    .map((c) => `“${c.label}”`);
  Object.assign(fig.el.dataset, { gapRows: gaps.rows, gapCols: gaps.cols, span: span.toFixed(3),
    swapped: String(swapped.length), grid: JSON.stringify(hit.geometry) });
  note.textContent = "Blue: B attends more than A; red: less; no colour: no change. "
    + (swapped.length ? `Swapped words are compared with each other (${swapped.slice(0, 3).join(", ")}). ` : "")
    + (gaps.rows || gaps.cols
      ? `White bands are ${[
        gaps.rows && `${gaps.rows} row${gaps.rows > 1 ? "s" : ""}`,
        gaps.cols && `${gaps.cols} column${gaps.cols > 1 ? "s" : ""}`,
      ].filter(Boolean).join(" and ")} `
        + "that only one sentence has (− only in A, + only in B): they have no counterpart, so no difference."
      : "Every row and column shown has a counterpart in the other sentence.");
  return hit;
}

/** Tooltip lines of one cell of the difference map. */
function diffTip(row, col, v, a, b) {
  if (row.future) return ["not generated yet in at least one of the two"];
  const only = (x) => (x.xa ? `only in A: ${x.xa.tip}` : `only in B: ${x.xb.tip}`);
  if (!row.r.xa || !row.r.xb) return [only(row.r), "no counterpart in the other sentence: no difference"];
  if (!col.c.xa || !col.c.xb) return [only(col.c), "no counterpart in the other sentence: no difference"];
  if (v !== v) return ["masked: a decoder position cannot attend to later ones"];
  const va = a.matrix[row.r.a * a.lay.cols.length + col.c.a], vb = b.matrix[row.r.b * b.lay.cols.length + col.c.b];
  return [`A: ${row.r.xa.tip} → ${col.c.xa.tip}: ${share(va)}`, `B: ${row.r.xb.tip} → ${col.c.xb.tip}: ${share(vb)}`,
    `B − A: ${signed(v)}`];
}
