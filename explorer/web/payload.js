// The one decoder of what the server sends: the arrays of transformer/core/wire.py and
// explorer/quantise.py, and the compact trace (schema in explorer/payload.py), whole for the viewer or its attention
// part alone for the training snapshots of the epoch comparison. Everything is decoded
// once per sentence into dense Float32Arrays, so that every later click only slices
// arrays that are already in memory. Attention travels deflated: `readTrace` inflates it
// with the browser's own DecompressionStream (asynchronous), then builds the Trace.

import { headValue } from "./attention.js";
import { readNames, OURS } from "./names.js";

export const SCHEMA = "attention-explorer-payload/2";

function bytes(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Little-endian float16 values (the per-row scales) -> Float32Array. */
function halfs(b64) {
  const b = bytes(b64), view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out = new Float32Array(b.byteLength / 2);
  for (let i = 0; i < out.length; i++) {
    const h = view.getUint16(2 * i, true), e = (h >> 10) & 0x1f, f = h & 0x3ff;
    const v = e === 0 ? f * 2 ** -24 : e === 31 ? (f ? NaN : Infinity) : (1024 + f) * 2 ** (e - 25);
    out[i] = h & 0x8000 ? -v : v;
  }
  return out;
}

/** An encoded array whose bytes are ready to read: a deflated one ({zip: "deflate"}) comes
 * back with its inflated bytes in `raw`; any other is returned as it is. */
export async function inflated(a) {
  if (!a || !a.zip) return a;
  if (a.zip !== "deflate") throw new Error(`unknown array compression ${a.zip}`);
  const stream = new Blob([bytes(a.data)]).stream().pipeThrough(new DecompressionStream("deflate"));
  return { ...a, zip: null, raw: new Uint8Array(await new Response(stream).arrayBuffer()) };
}

/** One encoded array -> {shape, data} with data a dense row-major Float32Array (an
 * Int32Array for token ids, encodings "u16" and "i32"). A deflated array must have been
 * through `inflated` first. */
export function decodeArray(a) {
  if (a.zip) throw new Error("a deflated array: inflate it first (readTrace does)");
  const shape = a.shape;
  const n = shape.reduce((x, y) => x * y, 1);
  const last = shape[shape.length - 1] || 1;
  const q = a.raw || bytes(a.data); // the array's own bytes (the row scales travel apart)
  if (a.enc === "u16" || a.enc === "i32") {
    const view = new DataView(q.buffer, q.byteOffset, q.byteLength);
    const ids = new Int32Array(n);
    for (let i = 0; i < n; i++) ids[i] = a.enc === "u16" ? view.getUint16(2 * i, true) : view.getInt32(4 * i, true);
    return { shape, data: ids };
  }
  const out = new Float32Array(n);
  if (a.enc === "f32") {
    // every browser we target is little-endian, like the encoder's "<f4"
    out.set(new Float32Array(q.buffer, q.byteOffset, n));
  } else if (a.enc === "u8lin") {
    const k = (a.hi - a.lo) / 255;
    for (let i = 0; i < n; i++) out[i] = a.lo + q[i] * k;
  } else if (a.enc === "u8row") {
    const scale = halfs(a.scale);
    for (let i = 0; i < n; i++) out[i] = (q[i] * scale[(i / last) | 0]) / 255;
  } else if (a.enc === "u8tril") {
    // row i of each (T, T) matrix holds entries 0..i; the rest are exact zeros
    const scale = halfs(a.scale), T = last;
    let p = 0;
    for (let m = 0; m < n / (T * T); m++) {
      for (let i = 0; i < T; i++) {
        const row = m * T + i, s = scale[row] / 255;
        for (let j = 0; j <= i; j++) out[row * T + j] = q[p++] * s;
      }
    }
  } else {
    throw new Error(`unknown array encoding ${a.enc}`);
  }
  return { shape, data: out };
}

/** Token ids (T, ..., k) -> nested arrays of their strings (same shape), through `vocab`. */
function tokenNames(a, vocab) {
  const { shape, data } = decodeArray(a);
  const nest = (off, dim) => (dim === shape.length - 1
    ? Array.from(data.subarray(off, off + shape[dim]), (i) => vocab[i])
    : Array.from({ length: shape[dim] }, (_, j) => nest((off + j) * shape[dim + 1], dim + 1)));
  return nest(0, 0);
}

/** A payload -> its Trace, once its deflated attention has been inflated. */
export async function readTrace(p) {
  if (!p || !p.attn) return new Trace(p); // the constructor says what is wrong
  const kinds = Object.keys(p.attn);
  const arrays = await Promise.all(kinds.map((k) => inflated(p.attn[k])));
  return new Trace({ ...p, attn: Object.fromEntries(kinds.map((k, i) => [k, arrays[i]])) });
}

/** A decoded trace: tokens plus accessors into the attention tensors. The attention part
 * (tokens, sizes, attn) is always there; candidates, positional encoding and the analyses
 * only in the viewer's payload. */
export class Trace {
  constructor(p) {
    if (!p || p.schema !== SCHEMA || !p.attn) throw new Error("not an attention-explorer payload");
    this.origin = p.origin || null;
    this.srcText = p.src_text === undefined ? null : p.src_text;
    this.translation = p.translation === undefined ? null : p.translation;
    this.src = p.src_tokens;
    this.tgt = p.tgt_tokens;
    this.special = new Set(p.special_tokens);
    this.steps = p.steps;
    this.heads = p.heads;
    this.forcedPrefix = p.forced_prefix || [];
    this.attn = {
      encoder: decodeArray(p.attn.encoder),
      decoder: decodeArray(p.attn.decoder),
      cross: decodeArray(p.attn.cross),
    };
    // tokens travel as ids plus one id -> string table (p.vocab), see explorer/payload.py
    this.topkTokens = p.topk ? tokenNames(p.topk.ids, p.vocab) : null; // [step][rank]
    this.topkProbs = p.topk ? decodeArray(p.topk.probs) : null;
    this.pe = p.pe ? decodeArray(p.pe) : null;
    this.rollout = p.rollout ? decodeArray(p.rollout) : null; // (T, S) source relevance per step
    this.encoderRollout = p.encoder_rollout ? decodeArray(p.encoder_rollout) : null; // (S, S)
    this.lensTokens = p.logit_lens ? tokenNames(p.logit_lens.ids, p.vocab) : null; // [step][layer][rank]
    this.lensProbs = p.logit_lens ? decodeArray(p.logit_lens.probs) : null; // (T, L_dec, 5)
    // a large vocabulary's trace comes without its lens: lens.js asks for it when it is wanted
    this.lensLeftOut = !p.logit_lens && !!p.logit_lens_left_out;
    this.headStats = p.head_stats || null; // the readings of this sentence, heads named by habit (explorer/payload.py)
    this.focus = p.focus || null; // the cross-attention head a new sentence opens on (explorer/payload.py focus_head)
    // what the labels call this trace's languages and special tokens (names.js)
    this.names = p.names ? readNames(p.names) : OURS;
  }

  /** The lens asked for afterwards ({logit_lens, vocab}, explorer/panels/lens.py), in place. */
  addLens(a) {
    this.lensTokens = tokenNames(a.logit_lens.ids, a.vocab);
    this.lensProbs = decodeArray(a.logit_lens.probs);
    this.lensLeftOut = false;
  }

  /** Logit lens at step index t: one entry per decoder layer, each the top-5 {token, prob}. */
  lens(t) {
    if (!this.lensTokens) return null;
    const [, L, k] = this.lensProbs.shape, d = this.lensProbs.data;
    return this.lensTokens[t].map((toks, l) => toks.map((token, i) => ({ token, prob: d[(t * L + l) * k + i] })));
  }

  isSpecial(tok) {
    return this.special.has(tok);
  }

  /** Number of layers of an attention type (encoder and decoder stacks may differ). */
  layers(view) {
    return this.attn[view === "encoder" ? "encoder" : view === "decoder" ? "decoder" : "cross"].shape[0];
  }

  /** Weight of (layer, head, query, key) in one view, all 0-based; head may be "mean" or "max". */
  weight(view, layer, head, q, k) {
    const { shape: [, H, Q, K], data } = this.attn[view];
    return headValue(data, layer * H * Q * K + q * K + k, H, Q * K, head);
  }

  /** The largest weight that reads as 0 in row q (0-based) of (layer, head): the 8-bit
   * codec rounds against each row's maximum, so weights below half a step of 1/255 of it
   * come out as zeros (mean and max over heads: the mean and max of the heads' bounds). */
  zeroBound(view, layer, head, q) {
    const { shape: [, H, Q, K], data } = this.attn[view];
    const bound = (h) => {
      let m = 0;
      for (let k = 0, p = ((layer * H + h) * Q + q) * K; k < K; k++, p++) m = Math.max(m, data[p]);
      return m / 510;
    };
    if (head !== "mean" && head !== "max") return bound(head);
    const all = Array.from({ length: H }, (_, h) => bound(h));
    return head === "mean" ? all.reduce((a, b) => a + b, 0) / H : Math.max(...all);
  }

  /** Top-k candidates for step index t (0-based). */
  topk(t) {
    const k = this.topkProbs.shape[1];
    const probs = Array.from(this.topkProbs.data.subarray(t * k, (t + 1) * k));
    return this.topkTokens[t].map((token, i) => ({ token, prob: probs[i], rank: i }));
  }
}
