"""The models one app serves: the first at "/", each other on its own page, with a switch.

``python app.py --checkpoint A --checkpoint B`` puts, say, our model beside a converted
OPUS-MT one; a teacher switches between them on one sentence (web/models.js carries the
sentence, step, view, layer and head across).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transformer.core.model import count_parameters


@dataclass(frozen=True)
class Model:
    key: str  # "" for the first model; else its page's name and its endpoints' suffix
    name: str  # the checkpoint folder's name
    parameters: int

    @property
    def label(self) -> str:
        """What the switch says: the checkpoint's name and its size."""
        return f"{self.name} · {self.parameters / 1e6:.0f}M parameters"

    @property
    def path(self) -> str:
        """Where its page is: "/" for the first model, "/<key>" for another."""
        return "/" + self.key.replace("_", "-")

    @classmethod
    def of(cls, tr, key: str = "") -> Model:
        name = tr.directory.name if getattr(tr, "directory", None) is not None else "model"
        return cls(key=key, name=name, parameters=count_parameters(tr.model))

    @classmethod
    def all_of(cls, translators: list) -> tuple[Model, ...]:
        """One Model per translator: the first keyless, the others keyed by their folder's name
        (letters, digits and "_"), numbered where two names agree."""
        models: list[Model] = []
        for i, tr in enumerate(translators):
            model = cls.of(tr)
            if i:
                key = re.sub(r"[^a-z0-9]+", "_", model.name.lower()).strip("_") or "model"
                taken = {m.key for m in models}
                key = next(k for k in (key, *(f"{key}_{n}" for n in range(2, 100))) if k not in taken)
                model = cls(key=key, name=model.name, parameters=model.parameters)
            models.append(model)
        return tuple(models)
