// What the labels call the model's languages and special tokens: the checkpoint's own names,
// which travel with each trace (the payload's `names`, explorer/names.py), so that a converted
// Marian model's page says </s> where ours says [EOS], an en→de model's says German, and a
// multilingual model's says the language each sentence was translated into. A payload without
// them (a saved trace, a notebook given none) is named as the shipped model is.
//
//   const n = namesOf(store.get().trace);
//   `${n.tgt} written (query)`   // "Italian written (query)"
//   n.eos                        // "[EOS]", or "</s>"

const OUR_TOKENS = Object.freeze({ pad: "[PAD]", unk: "[UNK]", sos: "[SOS]", eos: "[EOS]" });

/** The names a label reads: languages (`src`, `tgt`: English names; `srcLang`, `tgtLang`: codes),
 * the decoder's start token (`sos`), the end token (`eos`), padding (`pad`), the unknown source
 * token (`unk`), the source's own start and end (`srcSos`, null where sources have none, and
 * `srcEos`), `multilingual` (the model has language pickers) and `markers`: every special token
 * the "hide" switch hides, each once. */
export function readNames(p = {}) {
  const tokens = p.tokens || {}, src = { ...OUR_TOKENS, ...tokens.src }, tgt = { ...OUR_TOKENS, ...tokens.tgt };
  const markers = [tgt.sos, src.sos, tgt.eos, src.eos, tgt.pad, src.pad].filter(Boolean);
  return Object.freeze({
    src: p.src || "English", tgt: p.tgt || "Italian", srcLang: p.src_lang || "en", tgtLang: p.tgt_lang || "it",
    multilingual: p.multilingual === true, // many languages: a link names the pair (url.js)
    sos: tgt.sos, eos: tgt.eos, pad: tgt.pad, unk: src.unk, srcSos: src.sos, srcEos: src.eos,
    markers: [...new Set(markers)],
  });
}

/** The shipped model's names: what a page says before its first trace, and for a trace without names. */
export const OURS = readNames();

/** The names of trace `tr` (payload.js Trace), or the shipped model's without one. */
export const namesOf = (tr) => (tr && tr.names) || OURS;

/** The glossary entry a special token's name explains ("sos", "eos"), or null. */
export const tokenTerm = (n, tok) => (tok === n.sos ? "sos" : tok === n.eos ? "eos" : null);

/** Text the library writes with our tokens' names (a head's habit, "[SOS] sink") in this model's. */
export function spoken(text, n) {
  if (typeof text !== "string") return text;
  return text.replaceAll("[SOS]", n.sos).replaceAll("[EOS]", n.eos).replaceAll("[PAD]", n.pad)
    .replaceAll("[UNK]", n.unk);
}

/** "an" before a name said with a vowel first ("an English token"), else "a" ("a German token"); a U
 * said as "you" takes "a" ("a Ukrainian"), as explorer/names.py article() says. */
export function article(name) {
  const c = name.slice(0, 1).toUpperCase(), two = name.slice(0, 2).toLowerCase();
  return (c && "AEIO".includes(c)) || (c === "U" && two !== "uk" && two !== "uy") ? "an" : "a";
}
