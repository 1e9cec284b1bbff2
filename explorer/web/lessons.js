// The course: short lessons on the live model, each a sentence, the view it opens, a few plain
// words, a guess the learner may commit to before the model answers, and a task done in the
// explorer itself (click a cell, step, pick a head, knock a head out...). The task is checked
// against the trace on screen, and the answer is explained with the model's own numbers, read
// from the trace (or from the panel that computed them). "Show me" points at the place only when
// asked for: on-request hints help learners more than hints shown all the time.
//
// The lessons are data: the checkpoint's lessons.json (explorer/lessons.py), sent with the page
// as this view's data, with every fact its texts state measured on the model by a test. This
// module holds the behaviour of each kind of guess and task (GUESSES, TASKS); a lesson names
// its kinds.
//
// The lesson sits in a card docked at the bottom of the window, so the picture stays above it
// (the map fits the window less the card: `--ax-dock`, viewer-main.js). Progress is kept in the
// browser (PROGRESS_KEY); `?lesson=N` opens lesson N. Leaving gives the explorer back as it was:
// the sentence (traced again if a lesson replaced it), the view settings, the sections open, the
// sentence box's text and the scroll position.

import { el } from "./canvas.js";
import { quote } from "./attention.js";
import { term } from "./glossary.js";
import { share } from "./numbers.js";
import { onEnter } from "./keys.js";
import { nextFrame, watchSize } from "./view-base.js";

export const PROGRESS_KEY = "explorer-lessons-done";
/** The lesson open, or null: {index, phase: "guess" | "task" | "done", guess: {label, value} | null
 * (null: skipped or not asked), result: what the task's check found}. */
export const STATE = { global: { lesson: null } };

// the store keys a lesson sets, and that leaving it gives back
const RESTORED = ["step", "view", "layer", "head", "hide", "picture", "explain", "selection", "peFollow", "peLen",
  "focused"];
const word = (tok) => (tok || "").replace(/▁/g, "");
const q = (tok) => quote(word(tok));
const pct = (w) => share(w);

/** Text with [[shown|glossary key]] or [[key]] marks as nodes: glossary terms explain themselves on hover or tap. */
export function marked(text) {
  const out = [], re = /\[\[([^\]|]+)(?:\|([^\]]+))?\]\]/g;
  let at = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out.push(text.slice(at, m.index));
    try { out.push(term(m[1], (m[2] || m[1]).toLowerCase())); } catch { out.push(m[1]); }
    at = m.index + m[0].length;
  }
  out.push(text.slice(at));
  return out.filter((x) => x !== "");
}

// --- what the trace says --------------------------------------------------------------------
/** The weights of the decoder's row at the store's step in its view (cross or decoder
 * self-attention), one per key. */
function row(s, tr, head = s.head) {
  const h = head === "mean" || head === "max" ? head : Number(head) - 1;
  const keys = s.view === "decoder" ? tr.steps : tr.src.length;
  return Array.from({ length: keys }, (_, k) => tr.weight(s.view, s.layer - 1, h, s.step - 1, k));
}
const argmax = (xs) => xs.reduce((b, x, i) => (x > xs[b] ? i : b), 0);
/** A source token is a sink: a special token or punctuation. */
const sinky = (tr, tok) => tr.isSpecial(tok) || /^\p{P}+$/u.test(word(tok));
/** Token i of `toks` continues a word (no ▁, not a marker, not punctuation). */
const isPiece = (tr, toks, i) => !toks[i].startsWith("▁") && !sinky(tr, toks[i]);
/** The whole word token i belongs to. */
function wholeWord(toks, i) {
  let a = i, b = i + 1;
  while (a > 0 && !toks[a].startsWith("▁")) a--;
  while (b < toks.length && !toks[b].startsWith("▁") && /^[\p{L}\p{N}]/u.test(toks[b])) b++;
  return { text: toks.slice(a, b).map(word).join(""), n: b - a };
}
/** The first decoder layer (1-based) from which the logit lens's top token is the emitted one. */
function lensFirst(tr, t) {
  const lens = tr.lens(t), out = tr.tgt[t + 1];
  if (!lens) return null;
  let first = null;
  for (let l = lens.length - 1; l >= 0 && lens[l][0].token === out; l--) first = l + 1;
  return first;
}
/** A candidate's probability at step index t, or null when it is not among the candidates. */
function probOf(tr, t, guess) {
  const g = guess.trim().toLowerCase();
  const c = tr.topk(t).find((x) => word(x.token).toLowerCase() === g);
  return c ? c.prob : null;
}

// --- guesses: what the learner commits to before the model answers ------------------------------
// each: choices(lesson, tr) for buttons (or null: a text box), and reveal(lesson, s, guess, result)
export const GUESSES = {
  next: {
    choices: () => null,
    reveal: (lesson, s, g) => {
      const tr = s.trace, t = lesson.view.step, top = tr.topk(t)[0], p = probOf(tr, t, g.value);
      return `You guessed ${quote(g.value)}. The model wrote ${q(tr.tgt[t + 1])}, p = ${pct(top.prob)}; `
        + (p === null ? "your word is not among its top candidates."
          : word(top.token).toLowerCase() === g.value.trim().toLowerCase() ? "the same as yours."
            : `it gave yours p = ${pct(p)}.`);
    },
  },
  source: {
    choices: (lesson, tr) => tr.src.map((tok, i) => ({ label: word(tok), value: i })).filter((c) => c.label),
    reveal: (lesson, s, g) => {
      const tr = s.trace, r = row({ ...s, ...viewOf(lesson) }, tr), top = argmax(r);
      return `You guessed ${quote(g.label)} (weight ${pct(r[g.value])}). The step looks most at ${q(tr.src[top])}, `
        + `${pct(r[top])} of its attention${top === g.value ? ": right." : "."}`;
    },
  },
  layer: {
    choices: (lesson, tr) => Array.from({ length: tr.layers("decoder") }, (_, l) => ({ label: `layer ${l + 1}`,
      value: l + 1 })),
    reveal: (lesson, s, g) => {
      const first = lensFirst(s.trace, lesson.view.step - 1);
      return `You guessed layer ${g.value}. The lens shows it on top from layer ${first}`
        + `${first === g.value ? ": right." : "."}`;
    },
  },
  choice: {
    choices: (lesson) => lesson.guess.choices.map((c, i) => ({ label: c.label, value: i })),
    reveal: (lesson, s, g, result) => {
      const c = lesson.guess.choices[g.value], right = TASKS[lesson.task.kind].judge(c, result);
      return `You guessed ${quote(c.label)}: ${right ? "right." : "not this time."}`;
    },
  },
};

/** The lesson's view settings as the store holds them. */
const viewOf = (lesson) => ({ view: lesson.view.view, layer: lesson.view.layer, head: String(lesson.view.head),
  step: lesson.view.step });

// --- tasks: what the learner does, checked against the store -----------------------------------
// each: done(lesson, s, ctx) -> a result (truthy) once the task is done; say(lesson, s, result)
// explains it with the model's numbers; `judge(choice, result)` for a "choice" guess
export const TASKS = {
  piece: {
    done: (lesson, s, ctx) => (ctx.chip !== null && isPiece(s.trace, s.trace.src, ctx.chip) ? { i: ctx.chip } : null),
    wrong: (lesson, s, ctx) => (ctx.chip === null ? null
      : `${q(s.trace.src[ctx.chip])} ${s.trace.src[ctx.chip].startsWith("▁") ? "starts a word (it has ▁)"
        : "is a marker or punctuation"}. Try another.`),
    say: (lesson, s, r) => {
      const w = wholeWord(s.trace.src, r.i);
      return `${q(s.trace.src[r.i])} continues a word: the model read ${quote(w.text)} as ${w.n} pieces.`;
    },
  },
  step: {
    done: (lesson, s) => (s.step === lesson.view.step + 1 ? { t: s.step - 1 } : null),
    say: (lesson, s, r) => {
      const c = s.trace.topk(r.t);
      return `Step ${r.t + 1}: ${c.slice(0, 3).map((x) => `${q(x.token)} ${pct(x.prob)}`).join(", ")}. `
        + `Greedy took ${q(s.trace.tgt[r.t + 1])}, the top one.`;
    },
  },
  "top-cell": {
    done: (lesson, s) => {
      const c = s.cell;
      if (!c || c.view !== s.view || c.step !== s.step) return null;
      const r = row(s, s.trace);
      return c.col - 1 === argmax(r) ? { r, k: c.col - 1 } : null;
    },
    wrong: (lesson, s) => {
      const c = s.cell;
      return c && c.view === s.view ? `That cell has ${pct(row(s, s.trace)[c.col - 1])}: not the darkest.` : null;
    },
    say: (lesson, s, r) => {
      const order = r.r.map((w, k) => [w, k]).sort((a, b) => b[0] - a[0]);
      return `Step ${s.step} gives ${q(s.trace.src[order[0][1]])} ${pct(order[0][0])} of its attention; `
        + `next comes ${q(s.trace.src[order[1][1]])} with ${pct(order[1][0])}.`;
    },
  },
  "sink-head": {
    done: (lesson, s) => {
      if (s.view !== lesson.view.view || s.layer !== lesson.task.layer || !/^\d+$/.test(s.head)) return null;
      if (s.step !== lesson.view.step) return null;
      const r = row(s, s.trace), sink = r.reduce((a, w, k) => a + (sinky(s.trace, s.trace.src[k]) ? w : 0), 0);
      return sink >= 0.5 ? { head: s.head, sink, top: argmax(r) } : null;
    },
    say: (lesson, s, r) => {
      const mean = row({ ...s, head: "mean" }, s.trace), m = argmax(mean);
      return `Head ${r.head} puts ${pct(r.sink)} of step ${s.step}'s attention on markers and punctuation, most on `
        + `${q(s.trace.src[r.top])}; the mean of the heads gives ${q(s.trace.src[m])} ${pct(mean[m])}.`;
    },
  },
  "masked-cell": {
    done: (lesson, s) => {
      const c = s.cell;
      return c && c.view === "decoder" && c.col > c.row && c.row <= s.step ? { row: c.row, col: c.col } : null;
    },
    say: (lesson, s, r) => `Row ${r.row} may read inputs 1 to ${r.row} only: input ${r.col} is written later, `
      + `so its weight is 0.`,
  },
  "pe-follow": {
    done: (lesson, s) => {
      const at = s.trace.src.findIndex((t) => word(t) === lesson.task.token);
      return (s.open || []).includes("pe") && s.peFollow === at ? { at } : null;
    },
    say: (lesson, s, r) => `Position ${r.at} holds ${q(s.trace.src[r.at])}: ${r.at} tokens stand before it.`,
  },
  "explain-cell": {
    done: (lesson, s) => (s.explain ? TASKS["top-cell"].done(lesson, s) : null),
    wrong: (lesson, s) => (s.explain ? TASKS["top-cell"].wrong(lesson, s) : null),
    say: (lesson, s, r) => `The largest score gives the largest weight: ${q(s.trace.src[r.k])} gets `
      + `${pct(r.r[r.k])} after the softmax. The table beside the map shows every q·k, weight and w·v.`,
  },
  open: {
    done: (lesson, s) => ((s.open || []).includes(lesson.task.section) ? { t: s.step - 1 } : null),
    say: (lesson, s, r) => {
      const first = lensFirst(s.trace, r.t);
      return first === null ? "" : `At step ${r.t + 1}, ${q(s.trace.tgt[r.t + 1])} is the top token from layer `
        + `${first} on.`;
    },
  },
  knockout: {
    done: (lesson, s) => {
      const k = s.knockout, want = lesson.task.heads;
      if (!k || k.status !== "done" || !k.knockout) return null;
      const has = (h) => (k.heads || []).some((x) => x.kind === h.kind && x.layer + 1 === h.layer
        && x.head + 1 === h.head);
      return want.every(has) ? { before: k.original.translation, after: k.knockout.translation, steps: k.steps } : null;
    },
    say: (lesson, s, r) => {
      // the step whose own token lost most: the original token's probability with and without the heads
      const st = r.steps, drop = st.token.map((_, t) => st.p_original[t] - st.p_knockout[t]), t = argmax(drop);
      return `Before: ${quote(r.before)} After: ${quote(r.after)} The largest loss is at step ${t + 1}: `
        + `${q(st.token[t])} falls from p = ${pct(st.p_original[t])} to ${pct(st.p_knockout[t])}.`;
    },
    judge: (c, r) => {
      const kept = (w) => r.after.includes(w);
      return c.lost.length ? c.lost.every((w) => !kept(w)) : r.before === r.after;
    },
  },
  beam: {
    done: (lesson, s) => (s.beam && s.beam.translation ? { beam: s.beam.translation,
      greedy: s.beam.greedy_translation || s.trace.translation } : null),
    say: (lesson, s, r) => `Greedy: ${quote(r.greedy)} Beam of ${s.beam.beam_size}: ${quote(r.beam)}`,
    judge: (c, r) => c.same === (r.beam === r.greedy),
  },
};

// --- progress kept in the browser ------------------------------------------------------------------
function readDone() {
  try { return new Set(JSON.parse(localStorage.getItem(PROGRESS_KEY) || "[]")); } catch { return new Set(); }
}
function writeDone(done) {
  try { localStorage.setItem(PROGRESS_KEY, JSON.stringify([...done])); } catch { /* private mode */ }
}

export class Lessons {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.lessons = (server && server.data) || [];
    this.done = readDone();
    this.ctx = { chip: null };
    this.build(host);
    if (!this.lessons.length) { host.hidden = true; return; }
    store.subscribe((s, changed) => this.follow(s, changed));
    // a click on a source chip, for the lessons that ask for one
    document.addEventListener("click", (ev) => this.chipClick(ev));
    const asked = Number(new URLSearchParams(window.location.search).get("lesson"));
    if (Number.isInteger(asked) && asked >= 1 && asked <= this.lessons.length) this.open(asked - 1);
    this.count();
  }

  build(host) {
    this.entry = el("button", { id: "lessons-btn", type: "button", className: "ax-action",
      title: "Short lessons on this model: each asks you to do something in the explorer" });
    host.replaceChildren(el("div", { className: "ls-entry" }, [this.entry]));
    this.entry.addEventListener("click", () => (this.dock.hidden ? this.showList() : this.leave()));
    const b = (id, text, title) => el("button", { id, type: "button", className: "ls-btn", text, title });
    this.e = {
      count: el("span", { id: "lesson-count", className: "ls-count" }),
      title: el("strong", { id: "lesson-title", className: "ls-title" }),
      prev: b("lesson-prev", "◀", "Previous lesson"), next: b("lesson-next", "▶", "Next lesson"),
      list: b("lesson-list-btn", "All lessons", "Every lesson, and which you have done"),
      fold: b("lesson-fold", "–", "Fold the lesson away (the picture gets the room)"),
      close: b("lesson-close", "Leave", "Leave the lessons: the explorer as it was"),
      text: el("p", { id: "lesson-text", className: "ls-text" }),
      guess: el("div", { id: "lesson-guess", className: "ls-guess" }),
      task: el("p", { id: "lesson-task", className: "ls-task" }),
      show: b("lesson-showme", "Show me", "Point at where to do it"),
      hint: el("p", { id: "lesson-hint", className: "ls-hint", hidden: true }),
      wrong: el("p", { id: "lesson-wrong", className: "ls-wrong", hidden: true, "aria-live": "polite" }),
      feedback: el("div", { id: "lesson-feedback", className: "ls-feedback", hidden: true, "aria-live": "polite" }),
      cont: b("lesson-continue", "Next lesson ▶", "On to the next lesson"),
      menu: el("ol", { id: "lesson-list", className: "ls-list", hidden: true }),
    };
    const e = this.e;
    this.body = el("div", { className: "ls-body" }, [e.text, e.guess,
      el("div", { className: "ls-taskrow" }, [e.task, e.show]), e.hint, e.wrong, e.feedback, e.cont]);
    this.dock = el("aside", { id: "lesson-dock", className: "ls-dock", hidden: true, role: "region",
      "aria-label": "Lesson" }, [
      el("div", { className: "ls-head" }, [e.count, e.title, el("span", { className: "ls-nav" },
        [e.prev, e.list, e.next, e.fold, e.close])]),
      this.body, e.menu]);
    document.body.append(this.dock);
    e.prev.addEventListener("click", () => this.open(this.at() - 1));
    e.next.addEventListener("click", () => this.open(this.at() + 1));
    e.cont.addEventListener("click", () => this.open(this.at() + 1));
    e.list.addEventListener("click", () => this.showList());
    e.close.addEventListener("click", () => this.leave());
    e.fold.addEventListener("click", () => this.fold(!this.dock.classList.contains("ls-folded")));
    e.show.addEventListener("click", () => this.showMe());
    watchSize(this.dock, () => this.room());
  }

  at() {
    const l = this.store.get().lesson;
    return l ? l.index : -1;
  }

  count() {
    this.entry.textContent = `Lessons ${this.done.size}/${this.lessons.length}`;
  }

  // --- opening and leaving ---------------------------------------------------------------------
  /** Open lesson `i`: its sentence (traced if another is on screen), its view, its first phase. */
  open(i) {
    if (i < 0 || i >= this.lessons.length) return;
    const s = this.store.get(), lesson = this.lessons[i];
    if (!s.lesson && !this.before) this.before = this.saved(s);
    this.pointAt(null);
    this.ctx.chip = null;
    this.dock.hidden = false;
    this.e.menu.hidden = true;
    this.body.hidden = false;
    this.store.set({ lesson: { index: i, phase: lesson.guess ? "guess" : "task", guess: null, result: null },
      playing: false, presenting: false });
    this.setAddress(i + 1);
    if (s.trace && s.trace.srcText === lesson.sentence && !s.trace.forcedPrefix.length) this.applyView(lesson);
    else {
      this.waiting = lesson.sentence;
      this.server.ask({ text: lesson.sentence });
    }
    this.render();
  }

  /** What leaving gives back: the sentence, the view settings, the sections, the box, the scroll. */
  saved(s) {
    const box = document.querySelector("#src-text textarea");
    return { trace: s.trace, origin: s.origin, settings: Object.fromEntries(RESTORED.map((k) => [k, s[k]])),
      open: [...(s.open || [])], box: box ? box.value : null, scroll: window.scrollY };
  }

  applyView(lesson) {
    const s = this.store.get(), v = lesson.view;
    const open = [...new Set([...(this.before ? this.before.open : []), ...(v.open || [])])];
    // the lesson says why it shows this view: the line over the picture about the opening head goes
    this.store.set({ ...viewOf(lesson), hide: false, picture: "map", explain: false, cell: null, open, focus: null,
      ...(v.selection ? { selection: v.selection } : {}) });
    if (s.trace) nextFrame(() => this.scrollToPicture());
    for (const ms of [400, 1200, 3000]) setTimeout(() => this.keepOpen(lesson), ms);
  }

  /** The panels a lesson works in stay open: a panel whose title was clicked while the page was
   * still building it stays closed, and the store forgets it (sections.js), so it is asked again. */
  keepOpen(lesson) {
    const s = this.store.get();
    if (!s.lesson || this.lessons[s.lesson.index] !== lesson) return;
    const missing = (lesson.view.open || []).filter((x) => !(s.open || []).includes(x));
    if (missing.length) this.store.set({ open: [...(s.open || []), ...missing] });
  }

  /** The picture at the top of the window (the card covers the bottom). */
  scrollToPicture() {
    // the main view on a wide screen; on a phone its parts stand in the page (viewer.css), the map first
    const main = document.getElementById("main-view"), col = document.getElementById("attn-col");
    const box = main && main.getBoundingClientRect().height > 0 ? main : col;
    if (box) window.scrollTo({ top: Math.max(0, box.getBoundingClientRect().top + window.scrollY - 8) });
  }

  leave() {
    const b = this.before;
    this.before = null;
    this.pointAt(null);
    this.dock.hidden = true;
    this.store.set({ lesson: null });
    this.setAddress(null);
    this.room();
    if (!b) return;
    const s = this.store.get(), same = b.trace && s.trace && b.trace === s.trace;
    // sections a lesson opened close again (an accordion is closed by its own title)
    const closing = (s.open || []).filter((x) => !b.open.includes(x));
    for (const id of closing) {
      const acc = document.getElementById(id), label = acc && acc.querySelector(":scope > .label-wrap.open");
      if (label) label.click();
    }
    this.store.set({ ...b.settings, open: b.open });
    if (!same && b.trace) {
      // the sentence on screen before: traced again, then opened on the settings it had
      this.store.set({ link: { text: b.trace.srcText, forced: b.trace.forcedPrefix, origin: b.origin,
        settings: { ...b.settings, hide: b.settings.hide ? "1" : "0" }, open: b.open } });
      this.server.ask({ text: b.trace.srcText, forced: b.trace.forcedPrefix, origin: b.origin });
    }
    // the sentence box as it was: at once, or once the old sentence is back (its answer fills the box)
    if (same || !b.trace) this.refill(b.box);
    else this.boxAfter = { text: b.trace.srcText, box: b.box };
    nextFrame(() => window.scrollTo({ top: b.scroll }));
  }

  refill(text) {
    const box = document.querySelector("#src-text textarea");
    if (!box || text === null || box.value === text) return;
    nextFrame(() => {
      box.value = text;
      box.dispatchEvent(new Event("input", { bubbles: true }));
    });
  }

  setAddress(n) {
    const url = new URL(window.location.href);
    if (n) url.searchParams.set("lesson", String(n)); else url.searchParams.delete("lesson");
    if (url.href !== window.location.href) history.replaceState(history.state, "", url.href);
  }

  showList() {
    if (!this.store.get().lesson && !this.before) this.before = this.saved(this.store.get());
    this.dock.hidden = false;
    this.body.hidden = true;
    this.e.menu.hidden = false;
    this.e.count.textContent = `${this.done.size} of ${this.lessons.length} done`;
    this.e.title.textContent = "Lessons";
    this.e.menu.replaceChildren(...this.lessons.map((l, i) => {
      const b = el("button", { type: "button", className: "ls-item", id: `lesson-item-${i + 1}`,
        text: `${this.done.has(l.id) ? "✓ " : ""}${l.title}` });
      b.addEventListener("click", () => this.open(i));
      return el("li", {}, [b]);
    }));
    this.room();
  }

  fold(on) {
    this.dock.classList.toggle("ls-folded", on);
    this.e.fold.textContent = on ? "+" : "–";
    this.room();
  }

  /** The page keeps room for the card: the picture fits the window less the card (viewer-main.js). */
  room() {
    const h = this.dock.hidden ? 0 : this.dock.offsetHeight;
    const root = document.documentElement;
    if (root.style.getPropertyValue("--ax-dock") === `${h}px`) return;
    root.style.setProperty("--ax-dock", `${h}px`);
    root.classList.toggle("ls-docked", h > 0);
    window.dispatchEvent(new Event("resize"));
  }

  // --- following the store ------------------------------------------------------------------------
  follow(s, changed) {
    const l = s.lesson, after = this.boxAfter;
    if (after && changed.has("trace") && s.trace && s.trace.srcText === after.text) {
      this.boxAfter = null;
      this.refill(after.box);
    }
    if (!l) return;
    const lesson = this.lessons[l.index];
    if (changed.has("trace") && s.trace && this.waiting === s.trace.srcText) {
      this.waiting = null;
      this.applyView(lesson);
      this.render(); // the guess's choices come from the trace
      return;
    }
    if (changed.has("lesson")) { this.render(); return; }
    if (!s.trace || s.trace.srcText !== lesson.sentence) return;
    // a learner who steps past the guess has seen the answer: the guess is skipped
    if (l.phase === "guess" && lesson.guess.kind === "next" && changed.has("step") && s.step > lesson.view.step) {
      this.store.set({ lesson: { ...l, phase: "task" } });
      return this.check();
    }
    if (l.phase === "task") this.check();
  }

  chipClick(ev) {
    const chip = ev.target.closest && ev.target.closest("#src-chips .chip");
    if (!chip || !this.store.get().lesson) return;
    this.ctx.chip = [...chip.parentElement.children].indexOf(chip);
    this.check();
  }

  /** Whether the task is done; if so, the answer with the model's numbers. */
  check() {
    const s = this.store.get(), l = s.lesson;
    if (!l || l.phase !== "task" || !s.trace) return;
    const lesson = this.lessons[l.index], task = TASKS[lesson.task.kind];
    const result = task.done(lesson, s, this.ctx);
    const wrong = !result && task.wrong ? task.wrong(lesson, s, this.ctx) : null;
    this.e.wrong.hidden = !wrong;
    this.e.wrong.textContent = wrong || "";
    if (!result) return;
    this.done.add(lesson.id);
    writeDone(this.done);
    this.count();
    this.pointAt(null);
    this.store.set({ lesson: { ...l, phase: "done", result } });
    // where the answer is seen (the lens table, the knock-out's translations), above the card
    const shows = lesson.task.show && document.querySelector(lesson.task.show);
    if (shows) nextFrame(() => this.scrollAbove(shows));
  }

  commit(guess) {
    const l = this.store.get().lesson;
    this.store.set({ lesson: { ...l, phase: "task", guess } });
    this.check();
  }

  // --- drawing -----------------------------------------------------------------------------------------
  render() {
    const s = this.store.get(), l = s.lesson;
    document.documentElement.classList.toggle("ls-guessing", !!(l && l.phase === "guess"));
    document.documentElement.dataset.lessonGuess = l && l.phase === "guess" ? this.lessons[l.index].guess.kind : "";
    if (!l) return;
    const lesson = this.lessons[l.index], e = this.e;
    this.dock.dataset.lesson = String(l.index + 1);
    this.dock.dataset.phase = l.phase;
    e.count.textContent = `Lesson ${l.index + 1} of ${this.lessons.length}${this.done.has(lesson.id) ? " ✓" : ""}`;
    e.title.textContent = lesson.title;
    e.prev.disabled = l.index === 0;
    e.next.disabled = l.index === this.lessons.length - 1;
    e.text.replaceChildren(...marked(lesson.text));
    this.renderGuess(lesson, l, s);
    e.task.replaceChildren(el("strong", { text: l.phase === "done" ? "Done: " : "Your turn: " }), lesson.task.do);
    e.task.hidden = l.phase === "guess";
    e.show.hidden = l.phase !== "task";
    e.hint.hidden = true;
    e.wrong.hidden = true;
    this.renderFeedback(lesson, l, s);
    e.cont.hidden = l.phase !== "done" || l.index === this.lessons.length - 1;
    this.room();
    // a card taller than its room (a phone) scrolls to what the learner does now
    const now = { guess: e.guess, task: e.task, done: e.feedback }[l.phase];
    if (this.phase !== `${l.index}:${l.phase}`) {
      // a new lesson starts at its text; a new phase of the same lesson shows that phase
      const fresh = !this.phase || !this.phase.startsWith(`${l.index}:`);
      this.phase = `${l.index}:${l.phase}`;
      this.dock.scrollTop = fresh ? 0 : Math.max(0, now.offsetTop - 48);
    }
  }

  renderGuess(lesson, l, s) {
    const box = this.e.guess, g = lesson.guess;
    box.hidden = !g || l.phase !== "guess";
    if (box.hidden) return box.replaceChildren();
    const choices = s.trace && s.trace.srcText === lesson.sentence ? GUESSES[g.kind].choices(lesson, s.trace) : [];
    const skip = el("button", { id: "lesson-skip", type: "button", className: "ls-btn", text: "Skip",
      title: "Go on without guessing" });
    skip.addEventListener("click", () => this.commit(null));
    let controls;
    if (choices === null) {
      const input = el("input", { id: "lesson-guess-input", type: "text", maxLength: 40, autocomplete: "off",
        "aria-label": "Your guess" });
      const go = el("button", { id: "lesson-guess-submit", type: "button", className: "ls-btn ls-primary",
        text: "Guess" });
      const send = () => {
        const v = input.value.trim();
        if (v) this.commit({ label: v, value: v });
      };
      go.addEventListener("click", send);
      onEnter(input, send);
      controls = [input, go];
    } else {
      controls = choices.map((c, i) => {
        const b = el("button", { type: "button", className: "ls-btn ls-choice", id: `lesson-choice-${i + 1}`,
          text: c.label });
        b.addEventListener("click", () => this.commit(c));
        return b;
      });
    }
    box.replaceChildren(el("p", { className: "ls-ask" }, [el("strong", { text: "Guess first: " }), g.ask]),
      el("div", { className: "ls-choices" }, [...controls, skip]));
  }

  renderFeedback(lesson, l, s) {
    const box = this.e.feedback;
    box.hidden = l.phase !== "done";
    if (box.hidden || !s.trace) return box.replaceChildren();
    const task = TASKS[lesson.task.kind], parts = [];
    const said = task.say(lesson, s, l.result);
    if (said) parts.push(el("p", { className: "ls-said", text: said }));
    if (l.guess && lesson.guess) {
      parts.push(el("p", { id: "lesson-reveal", className: "ls-reveal",
        text: GUESSES[lesson.guess.kind].reveal(lesson, { ...s }, l.guess, l.result) }));
    } else if (lesson.guess) {
      parts.push(el("p", { id: "lesson-reveal", className: "ls-reveal", text: "No guess this time." }));
    }
    if (lesson.after) parts.push(el("p", { className: "ls-after", text: lesson.after }));
    box.replaceChildren(...parts);
  }

  // --- "Show me" -----------------------------------------------------------------------------------------
  showMe() {
    const l = this.store.get().lesson;
    if (!l) return;
    const lesson = this.lessons[l.index];
    this.e.hint.hidden = false;
    this.e.hint.textContent = lesson.hint.say;
    // the first of the hint's targets that is on screen (a button inside a section still opening: the section)
    const shown = (x) => x && x.getClientRects().length > 0;
    const target = lesson.hint.target.split(",").map((sel) => document.querySelector(sel.trim())).find(shown);
    this.pointAt(target || null);
  }

  pointAt(target) {
    if (this.pointed) this.pointed.classList.remove("ls-target");
    this.pointed = target;
    if (!target) return;
    target.classList.add("ls-target");
    this.scrollAbove(target);
  }

  /** `target` in the middle of what the card leaves of the window (its top, if it is taller). */
  scrollAbove(target) {
    const r = target.getBoundingClientRect();
    const room = window.innerHeight - (this.dock.hidden ? 0 : this.dock.offsetHeight);
    const top = window.scrollY + r.top - Math.max(8, (room - r.height) / 2);
    window.scrollTo({ top: Math.max(0, top) });
  }
}

export function mount(host, { store, server }) {
  return new Lessons(host, store, server);
}
