// The page's palette for what is coloured in script: canvases, colour legends and cells
// coloured by value. The colours are theme.css's custom properties, read with
// getComputedStyle, so the stylesheet stays the one place a colour is written and a figure
// always matches the page around it. The theme is Gradio's: theme.css turns dark under its
// `dark` class (on <body>, or on the host of an embedded app), which follows the visitor's
// `prefers-color-scheme`, the Hub's `?__theme=` and Gradio's own setting.

import { nextFrame } from "./view-base.js";

/** The element whose custom properties are the page's: Gradio's container where there is one
 * (its `dark` class may sit on any ancestor), else the body (a notebook). */
const host = () => document.querySelector(".gradio-container") || document.body || document.documentElement;

const prop = (style, name) => style.getPropertyValue(name).trim();

/** "light" or "dark": the palette theme.css gives the page now. */
export function currentTheme() {
  return prop(getComputedStyle(host()), "--ax-theme") === "dark" ? "dark" : "light";
}

/** "#rrggbb" or "#rgb" -> [r, g, b]. */
export function hexRgb(hex) {
  const h = hex.length === 4 ? `#${hex[1]}${hex[1]}${hex[2]}${hex[2]}${hex[3]}${hex[3]}` : hex;
  return [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
}

/** The page's palette now: colours as CSS strings, the colour maps as lists of [r, g, b] stops. */
export function readPalette() {
  const style = getComputedStyle(host()), v = (name) => prop(style, `--ax-${name}`);
  if (!v("theme")) throw new Error("theme.css is not on the page: the explorer has no colours to draw with");
  const stops = (name) => v(name).split(/\s+/).map(hexRgb);
  return {
    theme: v("theme") === "dark" ? "dark" : "light",
    background: v("bg"),
    text: v("text"),
    muted: v("faint"),
    highlight: v("highlight"),
    currentBg: v("current-bg"),
    masked: v("masked"),
    future: v("future"),
    cellLine: v("cell-line"),
    axis: v("axis"),
    guide: v("guide"),
    tick: v("tick"),
    sequential: stops("seq"),
    diverging: stops("div"),
  };
}

/** Call fn(theme) whenever the page's theme changes while it is open: Gradio toggles its
 * `dark` class when the system setting changes (it reloads the page for its own Settings
 * menu and for `?__theme=`), so a change of class on the few elements that can carry it is
 * the signal. Returns a function that stops watching. */
export function watchTheme(fn) {
  let last = currentTheme();
  const check = () => {
    const now = currentTheme();
    if (now !== last) { last = now; fn(now); }
  };
  const app = document.querySelector("gradio-app");
  const carriers = new Set([document.documentElement, document.body, app && app.parentElement].filter(Boolean));
  const observer = new MutationObserver(check);
  for (const e of carriers) observer.observe(e, { attributes: true, attributeFilter: ["class"] });
  // the class may change before this listener runs: check again once the system setting has changed
  const scheme = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  const later = () => nextFrame(check);
  if (scheme) scheme.addEventListener("change", later);
  return () => { observer.disconnect(); if (scheme) scheme.removeEventListener("change", later); };
}
