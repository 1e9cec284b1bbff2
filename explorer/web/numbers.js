// Numbers as a person reads them, for every view: the same few rules everywhere, so that a
// weight reads the same in a tooltip, a bar label, a table and a caption.
//
// Attention weights travel as 8-bit values (explorer/payload.py), so three decimals would
// print a weight of 0.0017 as "0.002" and a smaller one as "0.000", a zero that is not one.
// A share keeps two significant digits below 0.1 and two decimals above; a difference never
// prints a sign on a zero ("−0.00").

const MINUS = "−"; // the typographic minus, as in the captions' "B − A"

/** Trailing zeros of a fixed-point string dropped: "0.0400" -> "0.04", "2.000" -> "2". */
const trim = (s) => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);

/** A weight or probability in [0, 1]: "0", "< 0.001", "0.0017", "0.043", "0.43", "1.00". */
export function share(x) {
  if (!Number.isFinite(x)) return String(x);
  if (x <= 0) return "0";
  if (x < 0.001) return "< 0.001";
  if (x < 0.1) return trim(x.toPrecision(2));
  return x.toFixed(2);
}

/** `x` rounded up to one significant digit, as text: 0.00176 -> "0.002". */
function roundUp(x) {
  const p = 10 ** Math.floor(Math.log10(x));
  return trim((Math.ceil(x / p - 1e-9) * p).toFixed(Math.max(0, -Math.floor(Math.log10(x)))));
}

/** An attention weight as the payload holds it. A zero there only says that the weight was
 * below half a quantisation step of its row (`below`, Trace.zeroBound), so it reads
 * "< 0.002" rather than a zero it may not be; any other weight reads as a share. */
export function weight(w, below = 0) {
  return w === 0 && below > 0 ? `< ${roundUp(below)}` : share(w);
}

/** A difference of two shares: "+0.43", "−0.0012", and "0" when it rounds to nothing. */
export function signed(x) {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a < 0.0005) return "0";
  return `${x > 0 ? "+" : MINUS}${a < 0.1 ? trim(a.toPrecision(2)) : a.toFixed(2)}`;
}

/** "1 step/s", "4 steps/s": a count with its noun, singular for one. */
export const count = (n, noun, plural = `${noun}s`) => `${n} ${n === 1 ? noun : plural}`;

/** The final model's epoch as the epoch panel names it: "epoch 15", or for a fine-tuned model
 * (its snapshots are those of the model it started from) "epoch 13 + 3 of fine-tuning"; ""
 * when the checkpoint does not say. */
export function finalEpoch(final) {
  if (!final || !final.epoch) return "";
  return final.epochs_before ? `epoch ${final.epochs_before} + ${final.epoch} of fine-tuning` : `epoch ${final.epoch}`;
}
