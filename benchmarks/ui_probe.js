// In-page probes for benchmarks/ui_latency.py.
//
// Installed with Playwright's add_init_script, so it runs before any app script. Every time
// is performance.now() inside the page (ms since navigation start): Playwright's own round
// trips to the page never count, only what the user meets.
//
// "Painted" means: the condition holds in the DOM, then a requestAnimationFrame callback has
// run (it runs just before the browser paints that frame) and a message posted from it has
// been delivered (it runs after that paint).
(() => {
  if (window.__bench) return;
  const B = (window.__bench = { marks: {}, playLog: [] });

  // The real control: the element itself, or the first button/input/select/textarea inside a
  // Gradio wrapper that carries the id.
  function control(sel) {
    const el = document.querySelector(sel);
    if (!el || el.matches("button, input, select, textarea")) return el;
    return el.querySelector("button, input, select, textarea");
  }
  B.control = control;

  // Resolves with performance.now() once the next frame has been painted.
  function afterPaint() {
    return new Promise((resolve) =>
      requestAnimationFrame(() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = () => resolve(performance.now());
        ch.port2.postMessage(null);
      })
    );
  }
  B.afterPaint = afterPaint;

  // The data-* attributes a view element carries (data-step, data-view, ...), or null.
  function attrs(sel) {
    const el = document.querySelector(sel);
    if (!el) return null;
    const out = {};
    for (const a of el.attributes) if (a.name.startsWith("data-")) out[a.name] = a.value;
    return out;
  }
  B.attrs = attrs;

  // Elements that got a data-* attribute written (or were inserted) since the last reset:
  // a view re-painted with the same values still counts as "fresh".
  let touched = new Set();
  new MutationObserver((records) => {
    for (const r of records) {
      if (r.type === "attributes" && r.target.id) touched.add("#" + r.target.id);
      if (r.type === "childList")
        for (const n of r.addedNodes) {
          if (n.nodeType !== 1) continue;
          if (n.id) touched.add("#" + n.id);
          for (const c of n.querySelectorAll("[id]")) touched.add("#" + c.id);
        }
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-step", "data-view", "data-layer", "data-head", "data-hide"] });

  // One condition of a wait list:
  //   {sel, attrs: {name: value | {not: value} | {any: true}}, optional, fresh}
  //     attrs must hold on sel; with optional, attributes sel does not carry are skipped
  //     (and a missing element passes); with fresh, sel must have been re-painted since t0.
  //   {sel, valueNot: s}   the control's value differs from s (e.g. the translation box)
  //   {sel, enabled: true} the control exists and is not disabled
  //   {sel, exists: true}  the element exists
  //   {sel, children: n}   the element holds at least n elements (chips, bars)
  function holds(c) {
    if (c.valueNot !== undefined) {
      const el = control(c.sel);
      return !!el && el.value !== c.valueNot && el.value.trim() !== "";
    }
    if (c.enabled) {
      const el = control(c.sel);
      return !!el && !el.disabled;
    }
    if (c.exists) return !!document.querySelector(c.sel);
    if (c.children !== undefined) {
      const el = document.querySelector(c.sel);
      return !!el && el.querySelectorAll("*").length >= c.children;
    }
    const el = document.querySelector(c.sel);
    if (!el) return !!c.optional;
    if (c.fresh && !touched.has(c.sel)) return false;
    for (const [name, want] of Object.entries(c.attrs || {})) {
      const have = el.getAttribute(name);
      if (have === null) {
        if (c.optional) continue;
        return false;
      }
      if (want !== null && typeof want === "object") {
        if ("not" in want && have === String(want.not)) return false;
      } else if (have !== String(want)) return false;
    }
    return true;
  }
  const allHold = (conds) => conds.every(holds);
  B.holds = allHold;

  // Resolves true when every condition holds (checked now and after each DOM mutation, and
  // on a 5 ms poll as a safety net for changes no mutation reports, like canvas pixels),
  // false after timeoutMs.
  function waitFor(conds, timeoutMs) {
    return new Promise((resolve) => {
      if (allHold(conds)) return resolve(true);
      const obs = new MutationObserver(() => allHold(conds) && done(true));
      const poll = setInterval(() => allHold(conds) && done(true), 5);
      const timer = setTimeout(() => done(false), timeoutMs);
      function done(ok) {
        obs.disconnect();
        clearInterval(poll);
        clearTimeout(timer);
        resolve(ok);
      }
      obs.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    });
  }
  B.waitFor = waitFor;

  // Do one user action and time it until `wait` holds and the frame is painted.
  //   spec = {sel, action: "click" | "set", value, wait: [conditions], timeoutMs}
  // "set" writes value to a select/range/checkbox and fires input + change, as a user's
  // pick does. Returns {ms, syncMs} (syncMs: until the app's handlers returned, i.e. the
  // script part; the rest is waiting for and painting the frame) or {ms: null, error}.
  B.act = async (spec) => {
    const el = control(spec.sel);
    if (!el) return { ms: null, error: `no element ${spec.sel}` };
    if (el.disabled) return { ms: null, error: `${spec.sel} is disabled` };
    touched = new Set();
    const t0 = performance.now();
    if (spec.action === "set") {
      if (el.type === "checkbox") el.checked = !!spec.value;
      else el.value = String(spec.value);
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
    } else {
      el.click();
    }
    const tSync = performance.now(); // the app's event handlers have returned
    const ok = await waitFor(spec.wait, spec.timeoutMs || 10000);
    const t1 = await afterPaint();
    if (!ok) return { ms: null, error: `timeout after ${spec.timeoutMs || 10000} ms`, attrs: attrs("#attn-plot") };
    return { ms: t1 - t0, syncMs: tSync - t0 };
  };

  // Since page load: note the first time each named condition list holds (then painted).
  //   B.watch("interactive", [conditions])  ->  B.marks.interactive = ms since navigation
  B.watch = (name, conds, timeoutMs = 60000) =>
    waitFor(conds, timeoutMs).then(async (ok) => {
      const t = await afterPaint();
      B.marks[name] = ok ? t : null;
    });

  // Play: log (time, data-step) each time #attn-plot shows another step.
  B.recordPlay = () => {
    B.playLog = [];
    let last = null;
    const note = () => {
      const el = document.querySelector("#attn-plot");
      const s = el && el.getAttribute("data-step");
      if (s !== null && s !== last) {
        last = s;
        B.playLog.push([performance.now(), Number(s)]);
      }
    };
    note();
    const obs = new MutationObserver(note);
    obs.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-step"] });
    B.stopPlay = () => obs.disconnect();
  };
})();

// Watches asked for before the page loaded (ui_latency.py sets window.__benchWatches in an
// earlier init script), so a mark is the first moment the condition held, not the moment
// Playwright got around to asking.
for (const [name, conds] of Object.entries(window.__benchWatches || {})) window.__bench.watch(name, conds);
