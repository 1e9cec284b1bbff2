// A class in the explorer. A teacher projects the explorer and starts a class, which gives a
// short code; students open the same page on their phones, type the code (or open a ?class=CODE
// link) and follow the teacher's sentence, step and view. The teacher asks about the step on
// screen (the word it writes, the source word it reads most, the layer where the logit lens
// finds its word), the class answers, and the teacher reveals: the projector shows the class's
// answers as a chart beside the model's own (classroom-answers.js), each phone the student's
// answer beside the model's.
//
// The server keeps the class (explorer/class_api.py, explorer/classroom.py). This view asks it
// through its block, one request at a time, and polls: the teacher's tally twice a second while
// a question is open, a student's state every 1.5 s (the intervals come with the page). Whatever
// would give an open question away (the translation, the candidates, the map, the logit lens)
// is hidden on every screen until the reveal (classroom.css, keyed on the root's data-class-ask).
//
// The browser keeps no name: a student is the random id the server gave (localStorage, per
// code), so a reload rejoins as the same student; a teacher's browser remembers the codes it
// started, so a reload of the projector's page resumes its class.

import { el } from "./canvas.js";
import { ASK, KINDS, chartRows, classRows, mineLabel, modelAnswer, norm, verdict } from "./classroom-answers.js";
import { share } from "./numbers.js";
import { onEnter } from "./keys.js";
import { nextFrame, watchSize } from "./view-base.js";

/** The class this page is in, or null: {code, role: "teacher" | "student", student (the id),
 * students, view, question: {id, kind, step, choices, status}, tally, mine, error, ended}. */
export const STATE = { global: { classroom: null } };
export const STUDENTS_KEY = "explorer-class-students"; // {code: student id}
export const TEACHING_KEY = "explorer-class-teaching"; // {code: teacher key}: the classes this browser started
const WAIT_MS = 20000; // a request the server has not answered by then is given up (the next poll asks again)
const SHOW_DELAY_MS = 200; // the teacher's view goes to the class once the clicks have paused this long
const VIEW_KEYS = ["trace", "origin", "step", "view", "layer", "head"];

const readJson = (key, fallback) => {
  try { return JSON.parse(localStorage.getItem(key)) ?? fallback; } catch { return fallback; }
};
// the classes this browser started, with their teacher keys (a list of codes, kept before keys, counts as none)
const teaching = () => {
  const kept = readJson(TEACHING_KEY, {});
  return kept && typeof kept === "object" && !Array.isArray(kept) ? kept : {};
};
const writeJson = (key, value) => {
  try { localStorage.setItem(key, JSON.stringify(value)); } catch { /* private mode: this page only */ }
};
const sameIds = (a, b) => (a || []).join(".") === (b || []).join(".");

/** An HTML bar chart: one row per {key, label, value in [0, 1]}, the bar as long as the value;
 * `mark` is the key of the model's answer, `mine` the student's, `number(row)` the figure shown. */
function barChart(id, title, rows, { mark = null, mine = null, number = (r) => share(r.value) } = {}) {
  return el("figure", { id, className: "cl-chart" }, [
    el("figcaption", { text: title }),
    el("ol", { className: "cl-bars" }, rows.map((r) => {
      const cls = ["cl-line", r.key !== null && r.key === mark ? "cl-mark" : "", r.key !== null && r.key === mine
        ? "cl-mine" : ""].filter(Boolean).join(" ");
      return el("li", { className: cls, "data-key": r.key ?? "" }, [
        el("span", { className: "cl-label", text: r.label + (r.key !== null && r.key === mine ? " (you)" : "") }),
        el("span", { className: "cl-track" }, [el("span", { className: "cl-bar",
          style: `width: ${(100 * Math.min(1, Math.max(0, r.value))).toFixed(1)}%` })]),
        el("span", { className: "cl-num", text: number(r) }),
      ]);
    })),
  ]);
}

export class Classroom {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.cfg = (server && server.data)
      || { poll: { tally: 0.5, state: 1.5, idle: 3, perSecond: 50 }, codeLength: 5, maxAnswer: 40 };
    this.queue = [];
    this.inFlight = null;
    this.serial = 0;
    this.build(host);
    server.onValue((v) => this.heard(v));
    store.subscribe((s, changed) => this.onStore(s, changed));
    const code = new URLSearchParams(window.location.search).get("class");
    if (code) this.enter(code);
  }

  build(host) {
    // "Class" whether or not a class is on: the code stands large in the card
    this.entry = el("button", { id: "class-btn", type: "button", className: "ax-action", text: "Class",
      title: "Teach a class from this page, or join your teacher's class with its code" });
    host.replaceChildren(el("div", { className: "cl-entry" }, [this.entry]));
    this.entry.addEventListener("click", () => this.toggle());
    const b = (id, text, title, cls = "cl-btn") => el("button", { id, type: "button", className: cls, text, title });
    const e = (this.e = {
      title: el("strong", { id: "class-title", className: "cl-title", text: "Class" }),
      status: el("span", { id: "class-status", className: "cl-status", "aria-live": "polite" }),
      fold: b("class-fold", "–", "Fold the class card away (the picture gets the room)"),
      leave: b("class-leave", "Leave", "Leave the class"),
      // joining or starting
      codeInput: el("input", { id: "class-code-input", type: "text", maxLength: 8, autocomplete: "off",
        autocapitalize: "characters", spellcheck: "false", enterkeyhint: "go", "aria-label": "Class code",
        placeholder: "Code" }),
      join: b("class-join-btn", "Join", "Join the class with this code", "cl-btn cl-primary"),
      start: b("class-start-btn", "Start a class", "Teach: get a code for your students"),
      error: el("p", { id: "class-error", className: "cl-error", hidden: true, "aria-live": "polite" }),
      // the class
      code: el("span", { id: "class-code", className: "cl-code" }),
      link: el("span", { id: "class-link", className: "cl-link" }),
      askRow: el("div", { id: "class-ask", className: "cl-askrow" }),
      reveal: b("class-reveal", "Reveal", "Show the model's answer beside the class's", "cl-btn cl-primary"),
      question: el("p", { id: "class-question", className: "cl-question" }),
      answer: el("div", { id: "class-answer", className: "cl-answer" }),
      sent: el("p", { id: "class-sent", className: "cl-sent", "aria-live": "polite" }),
      verdict: el("p", { id: "class-verdict", className: "cl-verdict", "aria-live": "polite" }),
      charts: el("div", { id: "class-charts", className: "cl-charts" }),
    });
    this.askButtons = KINDS.map((kind) => {
      const btn = b(`class-ask-${kind}`, ASK[kind].button, ASK[kind].title);
      btn.addEventListener("click", () => this.ask(kind));
      return btn;
    });
    e.askRow.append(el("span", { id: "class-ask-label", className: "cl-asklabel" }), ...this.askButtons, e.reveal);
    this.menu = el("div", { id: "class-menu", className: "cl-menu" }, [
      el("p", { className: "cl-help", text: "Join your teacher's class: type the code on the projector." }),
      el("div", { className: "cl-row" }, [e.codeInput, e.join]),
      el("p", { className: "cl-help" }, ["Or teach from this page: ", e.start,
        " Your students join with its code; nothing about them is kept."]),
    ]);
    this.body = el("div", { className: "cl-body" }, [
      el("p", { className: "cl-coderow" }, [el("span", { className: "cl-codelabel", text: "Code" }), e.code, e.link]),
      e.askRow, e.question, e.answer, e.sent, e.verdict, e.charts]);
    this.dock = el("aside", { id: "class-dock", className: "cl-dock", hidden: true, role: "region",
      "aria-label": "Class" }, [
      el("div", { className: "cl-head" }, [e.title, e.status, el("span", { className: "cl-nav" }, [e.fold, e.leave])]),
      this.menu, this.body, e.error]);
    document.body.append(this.dock);
    e.join.addEventListener("click", () => this.enter(e.codeInput.value));
    onEnter(e.codeInput, (code) => this.enter(code));
    e.start.addEventListener("click", () => this.start());
    e.reveal.addEventListener("click", () => this.reveal());
    e.leave.addEventListener("click", () => this.leave());
    e.fold.addEventListener("click", () => this.fold(!this.dock.classList.contains("cl-folded")));
    watchSize(this.dock, () => this.room());
  }

  // --- the server, one request at a time ----------------------------------------------------------
  /** A promise of the server's result for `action` (rejected with its one-line error). */
  call(action, fields = {}) {
    return new Promise((resolve, reject) => {
      this.queue.push({ action, fields, resolve, reject });
      this.pump();
    });
  }

  pump() {
    if (this.inFlight || !this.queue.length) return;
    const req = (this.inFlight = this.queue.shift());
    req.asked = ++this.serial;
    req.timer = setTimeout(() => this.settle({ asked: req.asked, error: "The server did not answer in time." }),
      WAIT_MS);
    this.server.ask({ ...req.fields, action: req.action, asked: req.asked });
  }

  heard(v) {
    if (v && this.inFlight && v.asked === this.inFlight.asked) this.settle(v);
  }

  settle(v) {
    const req = this.inFlight;
    if (!req || req.asked !== v.asked) return;
    clearTimeout(req.timer);
    this.inFlight = null;
    if (v.error) req.reject(Object.assign(new Error(v.error), { reason: v.reason || null }));
    else req.resolve(v.result);
    this.pump();
  }

  // --- starting, joining, leaving --------------------------------------------------------------------
  toggle() {
    if (!this.dock.hidden && !this.store.get().classroom) { this.dock.hidden = true; this.room(); return; }
    this.dock.hidden = false;
    this.fold(false);
    this.render();
    if (!this.store.get().classroom) this.e.codeInput.focus({ preventScroll: true });
  }

  /** Class `code` from the box or a link: as its teacher if this browser started it, else as a student. */
  enter(code) {
    const c = String(code || "").toUpperCase().replace(/[\s-]/g, "");
    if (c && teaching()[c]) return this.resume(c, "teacher");
    return this.resume(c, "student");
  }

  async start() {
    try {
      const { code, teacher } = await this.call("start");
      const kept = Object.entries(teaching()).filter(([k]) => k !== code).slice(0, 4);
      writeJson(TEACHING_KEY, Object.fromEntries([[code, teacher], ...kept]));
      this.begin({ code, role: "teacher", teacher }, null);
    } catch (err) { this.fail(err); }
  }

  /** Into class `code` as `role`: its state first (an unknown code says so in one line), then, for
   * a student without an id for it, a new one. */
  async resume(code, role) {
    try {
      const ids = readJson(STUDENTS_KEY, {});
      const st = await this.call("state", { code, student: ids[code] || "" });
      let student = null;
      if (role === "student") {
        student = ids[st.code] || (await this.call("join", { code: st.code }));
        writeJson(STUDENTS_KEY, { ...readJson(STUDENTS_KEY, {}), [st.code]: student });
      }
      const teacher = role === "teacher" ? teaching()[st.code] : null;
      this.begin({ code: st.code, role, student, teacher }, role === "student" || st.question ? st : null);
    } catch (err) { this.fail(err); }
  }

  begin(c, st) {
    this.sentView = null;
    this.following = null;
    this.appliedView = null;
    this.store.set({ classroom: { ...c, students: 0, view: null, question: null, tally: null, mine: null,
      error: null, ended: false } });
    this.setAddress(c.code);
    this.dock.hidden = false;
    this.fold(false);
    if (st) this.heardState(st);
    if (c.role === "teacher") this.lead();
    this.schedule();
  }

  leave() {
    const c = this.store.get().classroom;
    if (c && c.role === "teacher" && !c.ended) {
      this.call("end", { code: c.code, teacher: c.teacher }).catch(() => {}); // the class goes for everyone
      writeJson(TEACHING_KEY, Object.fromEntries(Object.entries(teaching()).filter(([k]) => k !== c.code)));
    }
    clearTimeout(this.timer);
    this.store.set({ classroom: null });
    this.setAddress(null);
    this.dock.hidden = true;
    this.e.error.hidden = true;
    this.room();
  }

  /** Starting or joining failed: its one line, in the card (open, as a ?class= link did not open it). */
  fail(err) {
    this.dock.hidden = false;
    this.render();
    this.e.error.hidden = false;
    this.e.error.textContent = err.message;
    this.room();
  }

  /** A failed poll or request: the class's own line; a class that is gone stops being asked. */
  lost(err) {
    const c = this.store.get().classroom;
    if (!c) return;
    this.update({ error: err.message, ended: c.ended || err.reason === "gone" });
  }

  setAddress(code) {
    const url = new URL(window.location.href);
    if (code) url.searchParams.set("class", code); else url.searchParams.delete("class");
    if (url.href !== window.location.href) history.replaceState(history.state, "", url.href);
  }

  /** The link students open: this page with ?class=CODE. */
  joinLink(code) {
    const url = new URL(window.location.href);
    url.hash = "";
    url.search = `?class=${code}`;
    return url.href;
  }

  update(patch) {
    const c = this.store.get().classroom;
    if (c) this.store.set({ classroom: { ...c, ...patch } });
  }

  // --- asking the server again and again -------------------------------------------------------------
  schedule() {
    clearTimeout(this.timer);
    const c = this.store.get().classroom;
    if (!c || c.ended) return;
    const p = this.cfg.poll, open = c.question && c.question.status === "open";
    // a large class's phones ask less often, so that the class's requests stay near `perSecond`
    const seconds = c.role === "teacher" ? (open ? p.tally : p.idle)
      : Math.max(p.state, (c.students || 0) / p.perSecond);
    this.timer = setTimeout(() => this.poll(), seconds * 1000);
  }

  async poll() {
    const c = this.store.get().classroom;
    if (!c) return;
    try {
      if (c.role === "teacher" && c.question && c.question.status === "open") {
        const tally = await this.call("tally", { code: c.code, question: c.question.id });
        if (this.current(c, tally.question)) this.update({ tally, students: tally.students, error: null });
      } else {
        this.heardState(await this.call("state", { code: c.code, student: c.student || "" }));
      }
    } catch (err) { if (this.current(c)) this.lost(err); }
    if (this.current(c)) this.schedule();
  }

  /** Whether class `c` (and question `qid`, if given) is still the one on this page. */
  current(c, qid = null) {
    const now = this.store.get().classroom;
    return !!now && now.code === c.code && (qid === null || (now.question && now.question.id === qid));
  }

  heardState(st) {
    const c = this.store.get().classroom;
    if (!c || st.code !== c.code) return;
    this.update({ students: st.students, view: st.view, question: st.question, mine: st.mine, tally: st.tally,
      error: null });
    if (c.role === "student") this.followClass(st.view);
  }

  // --- the teacher leads ---------------------------------------------------------------------------------
  /** What the teacher's page shows, as the class follows it. */
  teacherView(s) {
    const tr = s.trace;
    if (!tr) return null;
    const origin = tr.forcedPrefix.length && (s.origin === "whatif" || s.origin === "beam") ? s.origin : "translate";
    return { text: tr.srcText, forced: origin === "translate" ? [] : tr.forcedPrefix, origin, step: s.step,
      view: s.view, layer: s.layer, head: s.head };
  }

  onStore(s, changed) {
    const c = s.classroom;
    // (`lens`: a large vocabulary's lens, which a layer question's answer reads, has arrived: lens.js)
    if (["classroom", "trace", "step", "lens"].some((k) => changed.has(k))) this.render();
    if (changed.has("presenting")) nextFrame(() => this.placeDock(this.store.get().presenting));
    if (!c || c.role !== "teacher" || !VIEW_KEYS.some((k) => changed.has(k))) return;
    clearTimeout(this.showTimer);
    this.showTimer = setTimeout(() => this.lead(), SHOW_DELAY_MS);
  }

  async lead() {
    const s = this.store.get(), c = s.classroom, view = this.teacherView(s);
    if (!c || c.role !== "teacher" || c.ended || !view) return;
    const key = JSON.stringify(view);
    if (key === this.sentView) return;
    this.sentView = key;
    try { this.update({ view: await this.call("show", { code: c.code, teacher: c.teacher, view }) }); } catch (err) {
      this.sentView = null;
      this.lost(err);
    }
  }

  async ask(kind) {
    const s = this.store.get(), c = s.classroom, view = this.teacherView(s);
    if (!c || !view) return;
    try {
      const question = await this.call("ask", { code: c.code, teacher: c.teacher, kind, view });
      this.sentView = JSON.stringify(view);
      this.update({ question, tally: null, view, error: null });
      this.schedule(); // the tally, from now on at its own pace
    } catch (err) { this.lost(err); }
  }

  /** The answer for all to see: the tally, and the step asked about on screen (the class follows). */
  async reveal() {
    const c = this.store.get().classroom, q = c && c.question;
    if (!q || q.status !== "open") return;
    try {
      const tally = await this.call("reveal", { code: c.code, teacher: c.teacher, question: q.id });
      if (!this.current(c, q.id)) return;
      this.update({ tally, question: { ...q, status: "revealed" }, error: null });
      const tr = this.store.get().trace;
      if (tr && tr.srcText === q.text && q.step <= tr.steps) this.store.set({ step: q.step });
    } catch (err) { this.lost(err); }
  }

  // --- a student follows and answers -----------------------------------------------------------------
  /** The teacher's sentence into this viewer (traced once for the class, explorer/class_api.py),
   * then the teacher's step and view whenever the teacher changes them. */
  followClass(v) {
    if (!v) return;
    const s = this.store.get(), tr = s.trace, settings = { step: v.step, view: v.view, layer: v.layer, head: v.head };
    if (!tr || tr.srcText !== v.text || !sameIds(tr.forcedPrefix, v.forced)) {
      const key = JSON.stringify([v.text, v.forced]);
      if (this.following && this.following.key === key && Date.now() - this.following.at < WAIT_MS) return;
      this.following = { key, at: Date.now() };
      this.appliedView = JSON.stringify(settings);
      this.store.set({ link: { text: v.text, forced: v.forced, origin: v.origin === "translate" ? null : v.origin,
        settings: { ...settings, hide: "0", picture: s.picture } } });
      this.server.open({ code: this.store.get().classroom.code });
      return;
    }
    this.following = null;
    const key = JSON.stringify(settings);
    if (key === this.appliedView) return; // the teacher has not moved: the student may look around
    this.appliedView = key;
    this.store.set({ step: v.step, view: v.view, layer: v.layer, head: String(v.head) });
  }

  async send(answer, retried = false) {
    const c = this.store.get().classroom, q = c && c.question;
    if (!q || q.status !== "open" || answer === "") return;
    try {
      const mine = await this.call("answer", { code: c.code, student: c.student, question: q.id, answer });
      if (this.current(c, q.id)) this.update({ mine, error: null });
    } catch (err) {
      if (err.reason !== "stranger" || retried) { this.lost(err); return; }
      // the server no longer knows this browser's id for the class: a new one, and the answer again
      const ids = readJson(STUDENTS_KEY, {});
      delete ids[c.code];
      writeJson(STUDENTS_KEY, ids);
      try {
        const student = await this.call("join", { code: c.code });
        writeJson(STUDENTS_KEY, { ...readJson(STUDENTS_KEY, {}), [c.code]: student });
        this.update({ student });
        await this.send(answer, true);
      } catch (again) { this.lost(again); }
    }
  }

  // --- drawing ---------------------------------------------------------------------------------------------
  render() {
    const s = this.store.get(), c = s.classroom, e = this.e, q = c && c.question;
    const root = document.documentElement;
    // an open question hides what would answer it (classroom.css)
    if (q && q.status === "open") root.dataset.classAsk = q.kind;
    else delete root.dataset.classAsk;
    this.menu.hidden = !!c;
    this.body.hidden = !c;
    this.dock.dataset.role = c ? c.role : "";
    if (!c) {
      e.title.textContent = "Class";
      e.status.textContent = "";
      e.leave.hidden = true;
      return;
    }
    e.error.hidden = !c.error;
    e.error.textContent = c.error || "";
    e.leave.hidden = false;
    e.leave.textContent = c.role === "teacher" ? "End class" : "Leave";
    e.title.textContent = `Class ${c.code}`;
    e.status.textContent = c.ended ? "This class has ended."
      : c.role === "teacher" ? `${c.students} ${c.students === 1 ? "student" : "students"}` : "Following the teacher";
    e.code.textContent = c.code;
    e.link.textContent = this.joinLink(c.code);
    if (c.role === "teacher") this.renderTeacher(s, c, q); else this.renderStudent(s, c, q);
    this.room();
  }

  /** The question in words (a layer question names its word, read from the trace when it is there). */
  question(s, q) {
    const tr = s.trace, out = tr && tr.srcText === q.text && q.step <= tr.steps ? tr.tgt[q.step] : null;
    return ASK[q.kind].question(q.step, out);
  }

  /** The model's answer to `q` from the trace on screen, when it is the question's sentence. */
  model(s, c, q) {
    const tr = s.trace;
    if (!tr || !q || tr.srcText !== q.text) return null;
    return modelAnswer(tr, q, c.view);
  }

  renderTeacher(s, c, q) {
    const e = this.e, open = !!q && q.status === "open";
    e.askRow.hidden = false;
    // a question is about the next step: its answer is not on screen yet
    const last = !s.trace || s.step >= s.trace.steps;
    document.getElementById("class-ask-label").textContent = last ? "At the last step: nothing to ask about"
      : `Ask about step ${s.step + 1}:`;
    for (const b of this.askButtons) b.disabled = last || c.ended;
    e.reveal.disabled = !open || c.ended;
    e.answer.replaceChildren();
    e.sent.textContent = "";
    const t = c.tally;
    e.question.textContent = !q ? "Ask the class about the next step; their answers appear here."
      : `${this.question(s, q)} ${open ? `${t ? t.answered : 0} of ${c.students} answered.`
        : `${t ? t.answered : 0} answered.`}`;
    if (!q) { e.verdict.textContent = ""; e.charts.replaceChildren(); return; }
    const rows = chartRows(q, classRows(t, q), q.status === "revealed" ? this.model(s, c, q) : null);
    const model = rows.model, number = (r) => String(r.count);
    const charts = [barChart("class-chart-class", "The class (answers)", rows.cls, { mark: model && model.key,
      number })];
    if (model) charts.push(barChart("class-chart-model", `The model (${model.unit})`, model.rows, { mark: model.key }));
    e.charts.replaceChildren(...charts);
    e.verdict.textContent = model ? model.text : open ? "" : "The model's side: open the question's sentence.";
  }

  renderStudent(s, c, q) {
    const e = this.e;
    e.askRow.hidden = true;
    if (!q) {
      e.question.textContent = c.ended ? "" : "Watch the projector: your teacher's question comes here.";
      this.built = null;
      e.answer.replaceChildren();
      e.sent.textContent = e.verdict.textContent = "";
      e.charts.replaceChildren();
      return;
    }
    e.question.textContent = this.question(s, q);
    const open = q.status === "open", mine = mineLabel(q, c.mine);
    if (this.built !== `${q.id}:${q.status}`) {
      this.built = `${q.id}:${q.status}`;
      e.answer.replaceChildren(...(open ? this.controls(q) : []));
    }
    for (const btn of e.answer.querySelectorAll(".cl-choice")) {
      btn.setAttribute("aria-pressed", String(c.mine !== null && btn.dataset.value === (q.kind === "next_word"
        ? norm(c.mine) : String(c.mine))));
    }
    e.sent.textContent = open && mine !== null ? `Sent: “${mine}”. You can change it until the teacher reveals.`
      : open ? "" : q.status === "closed" ? "This question is closed." : "";
    const all = q.status === "revealed" ? this.model(s, c, q) : null;
    e.verdict.textContent = all ? verdict(q, c.mine, all) : q.status === "revealed" ? "The answer is coming…" : "";
    const model = chartRows(q, classRows(c.tally, q), all).model;
    const mineKey = c.mine === null ? null : q.kind === "next_word" ? norm(c.mine) : String(c.mine);
    e.charts.replaceChildren(...(model ? [barChart("class-chart-model", `The model (${model.unit})`, model.rows,
      { mark: model.key, mine: mineKey })] : []));
  }

  /** A student's ways to answer: the choices as buttons, and for a word a box to type one. */
  controls(q) {
    const choices = q.choices.map((label, i) => {
      const value = q.kind === "next_word" ? norm(label) : String(i + 1);
      const btn = el("button", { type: "button", id: `class-choice-${i + 1}`, className: "cl-btn cl-choice",
        text: label, "data-value": value, "aria-pressed": "false" });
      btn.addEventListener("click", () => this.send(q.kind === "next_word" ? label : String(i + 1)));
      return btn;
    });
    const out = [el("div", { className: "cl-choices" }, choices)];
    if (q.kind === "next_word") {
      const input = el("input", { id: "class-word-input", type: "text", maxLength: this.cfg.maxAnswer,
        autocomplete: "off", enterkeyhint: "send", "aria-label": "Your word", placeholder: "or type a word" });
      const go = el("button", { id: "class-word-send", type: "button", className: "cl-btn cl-primary", text: "Send" });
      const send = () => this.send(input.value.trim());
      go.addEventListener("click", send);
      onEnter(input, send);
      out.push(el("div", { className: "cl-row" }, [input, go]));
    }
    return out;
  }

  /** In presentation mode the viewer fills the screen (full screen where the browser allows, and
   * then only it is drawn): the card goes inside it, so the class's code, count and answers stay
   * on the projector; it comes back to the page when presentation ends. */
  placeDock(presenting) {
    const host = (presenting && document.querySelector(".ax-root.ax-presenting")) || document.body;
    if (this.dock.parentNode !== host) host.append(this.dock);
    this.room();
  }

  fold(on) {
    this.dock.classList.toggle("cl-folded", on);
    this.e.fold.textContent = on ? "+" : "–";
    this.room();
  }

  /** The page keeps room for the card, as for a lesson's (viewer-main.js reads --ax-dock). */
  room() {
    const lesson = document.getElementById("lesson-dock");
    const h = Math.max(this.dock.hidden ? 0 : this.dock.offsetHeight,
      lesson && !lesson.hidden ? lesson.offsetHeight : 0);
    const root = document.documentElement;
    root.classList.toggle("cl-docked", !this.dock.hidden);
    if ((root.style.getPropertyValue("--ax-dock") || "0px") === `${h}px`) return; // a page without a card: no resize
    root.style.setProperty("--ax-dock", `${h}px`);
    window.dispatchEvent(new Event("resize"));
  }
}

export function mount(host, { store, server }) {
  return new Classroom(host, store, server);
}
