"""The model card written beside a trained checkpoint (``README.md`` in the directory)."""

from __future__ import annotations

from .config import TransformerConfig

TATOEBA_CREDIT = "Tatoeba (tatoeba.org), CC-BY 2.0 FR"


def _table(rows: list[dict]) -> str:
    if not rows:
        return ""
    keys = [k for k in rows[0] if k != "averaged"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        if "averaged" in r:
            lines.append(f"| average of {', '.join(r['averaged'])}: val_loss {r.get('val_loss')}, "
                         f"BLEU {r.get('bleu')}, chrF {r.get('chrf')} |")
        else:
            lines.append("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    return "\n".join(lines)


def model_card(cfg: TransformerConfig, n_params: int, command: str, history: list[dict], metrics: dict,
               samples: list[tuple[str, str, str]], data_source: str) -> str:
    val = metrics.get("validation", {})
    sample_lines = "\n".join(f"| {s} | {r} | {h} |" for s, r, h in samples)
    credit = f"\n## Data\n\nTrained on {data_source}.\n"
    if "tatoeba" in data_source.lower():
        credit += f"Sentences from {TATOEBA_CREDIT}.\n"
    return f"""---
language: [{cfg.src_lang}, {cfg.tgt_lang}]
license: mit
tags: [translation, transformer, from-scratch]
---
# {cfg.src_lang}->{cfg.tgt_lang} Transformer (from scratch)

An encoder-decoder Transformer ("Attention Is All You Need") written from scratch in PyTorch.

- Command: `{command}`
- Parameters: {n_params:,}
- Shape: d_model {cfg.d_model}, h {cfg.h}, d_ff {cfg.d_ff}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers,
  {cfg.norm_placement}-norm, tied embeddings: {cfg.tie_embeddings}, vocabulary {cfg.src_vocab_size}/{cfg.tgt_vocab_size}
- Training wall time: {metrics.get("train_minutes")} minutes
- Validation (greedy, sacrebleu): BLEU {val.get("bleu")}, chrF {val.get("chrf")}
{credit}
## Training history

{_table(history)}

## Validation samples

| source | reference | model |
|---|---|---|
{sample_lines}
"""
