"""One typed config for the whole model, saved as ``config.json`` beside the weights.

The checkpoint directory alone must be enough to rebuild the model, so everything that
shapes a tensor or changes the forward pass lives here, including the special-token ids
of *each* tokenizer (source and target ids are never assumed to be the same).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path


ACTIVATIONS = ("relu", "swish", "gelu")
POSITIONAL_TABLES = ("interleaved", "halves", "fairseq", "learned")


@dataclass
class TransformerConfig:
    # sizes (paper names); a field whose metadata has "help" is a flag of `python train.py`
    # ("flag" names it when the paper name would read badly on a command line)
    d_model: int = field(default=256, metadata={"help": "model width d_model"})
    h: int = field(default=8, metadata={"flag": "heads", "help": "attention heads h"})
    d_ff: int = field(default=1024, metadata={"help": "feed-forward inner width d_ff"})
    # one --layers flag sets both stacks
    n_encoder_layers: int = field(default=3, metadata={"flag": "layers", "help": "encoder layers = decoder layers"})
    n_decoder_layers: int = field(default=3, metadata={"flag": "layers", "help": "encoder layers = decoder layers"})
    dropout: float = field(
        default=0.1, metadata={"fraction": True, "help": "dropout on residuals, embeddings and the FFN"}
    )
    attn_dropout: float = field(
        default=0.1, metadata={"fraction": True, "help": "dropout on attention weights (after they are recorded)"}
    )
    max_positions: int = 128
    # "pre": x + sublayer(norm(x)) (trains faster, needs a final norm);
    # "post": norm(x + sublayer(x)) as in the paper (and Marian/OPUS-MT: no final norm).
    norm_placement: str = "pre"
    layer_norm_eps: float = 1e-6
    # The switches below let the one model class run published Marian (OPUS-MT), M2M100, NLLB-200
    # and mBART-50 checkpoints (transformer.cli.convert); each defaults to what our own checkpoints
    # do, so a config.json written before they existed loads unchanged.
    # FFN nonlinearity: "relu" (the paper), "swish" (SiLU, x * sigmoid(x): OPUS-MT), "gelu" (exact, erf)
    activation: str = "relu"
    # positional table: "interleaved" (the paper: sin on even dims, cos on odd ones), "halves"
    # ([sin | cos], the angles of the first half repeated: Marian's), "fairseq" ([sin | cos] with
    # frequencies 10000^(-i / (d/2 - 1)): M2M100's and NLLB's) or "learned" (a trained table per
    # stack, stored with the weights: mBART's)
    positional_table: str = "interleaved"
    # the row of the sinusoidal table read at position 0: fairseq's models (M2M100, NLLB) number
    # positions from padding_idx + 1 = 2. A learned table is stored from the row position 0 reads.
    position_offset: int = 0
    # a LayerNorm on each stack's input (token vectors plus positions), before its dropout (mBART's
    # layernorm_embedding)
    embedding_norm: bool = False
    # multiply token embeddings by sqrt(d_model) (section 3.4 of the paper; Marian's scale_embedding)
    scale_embedding: bool = True
    # a learnt per-token bias added to the logits (Marian's final_logits_bias)
    final_logits_bias: bool = False
    # vocabularies and their special-token ids, one set per tokenizer. src_sos_id None: sources
    # carry no start token (Marian: ``x </s>``). tgt_sos_id is the token the decoder reads first:
    # our [SOS], or Marian's <pad> (its decoder_start_token_id), which then is no padding.
    src_vocab_size: int = 8000
    tgt_vocab_size: int = 8000
    src_pad_id: int = 0
    src_unk_id: int = 1
    src_sos_id: int | None = 2
    src_eos_id: int = 3
    tgt_pad_id: int = 0
    tgt_unk_id: int = 1
    tgt_sos_id: int = 2
    tgt_eos_id: int = 3
    # weight tying: "none", "decoder" (target embedding = output projection) or
    # "all" (source, target and output share one matrix; needs a joint vocabulary).
    tie_embeddings: str = "decoder"
    # target ids greedy decoding never emits (beam search never proposes them either, nor
    # [PAD] and [SOS]): none for ours; a Marian model's generation config bans its <pad>
    # (bad_words_ids), which is also its start token
    tgt_banned_ids: list[int] = field(default_factory=list)
    # a multilingual model's language tokens, by language code (one shared vocabulary): a
    # source is framed ``lang x </s>`` with its language's token, and the decoder, after its
    # start token, is forced to emit the target language's token first (M2M100, NLLB-200,
    # mBART-50). Empty for a model of one pair, whose sources are framed ``[SOS] x [EOS]``.
    lang_ids: dict[str, int] = field(default_factory=dict)
    # languages and tokenizer files, so a checkpoint says what it translates
    src_lang: str = "en"
    tgt_lang: str = "it"
    src_tokenizer_file: str = "tokenizer_src.json"
    tgt_tokenizer_file: str = "tokenizer_tgt.json"
    # dtype the weights are stored in on disk; the model always runs in float32
    storage_dtype: str = "float32"
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.d_model % self.h != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        if self.norm_placement not in ("pre", "post"):
            raise ValueError(f"norm_placement must be 'pre' or 'post', got {self.norm_placement!r}")
        if self.tie_embeddings not in ("none", "decoder", "all"):
            raise ValueError(f"tie_embeddings must be none/decoder/all, got {self.tie_embeddings!r}")
        if self.tie_embeddings == "all" and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("tie_embeddings='all' needs a joint vocabulary (equal vocab sizes)")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {'/'.join(ACTIVATIONS)}, got {self.activation!r}")
        if self.positional_table not in POSITIONAL_TABLES:
            raise ValueError(
                f"positional_table must be one of {'/'.join(POSITIONAL_TABLES)}, got {self.positional_table!r}"
            )
        if self.position_offset < 0 or (self.position_offset and self.positional_table == "learned"):
            raise ValueError(
                f"position_offset must be >= 0, and 0 for a learned table (stored from position 0), "
                f"got {self.position_offset}"
            )
        for code, i in self.lang_ids.items():
            if not 0 <= i < min(self.src_vocab_size, self.tgt_vocab_size):
                raise ValueError(f"lang_ids[{code!r}] = {i} is outside the vocabulary")
        for side in ("src", "tgt"):
            if self.lang_ids and getattr(self, side + "_lang") not in self.lang_ids:
                raise ValueError(f"{side}_lang {getattr(self, side + '_lang')!r} is not one of lang_ids")
        if self.storage_dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError(f"storage_dtype must be float32/bfloat16/float16, got {self.storage_dtype!r}")

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    @property
    def src_frame_len(self) -> int:
        """Special tokens around every source: [SOS] and [EOS] (a Marian model's: </s> alone;
        a multilingual model's: its language token and </s>)."""
        return 1 if self.src_sos_id is None and not self.lang_ids else 2

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, data: dict) -> "TransformerConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def from_json(cls, path: str | Path) -> "TransformerConfig":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
