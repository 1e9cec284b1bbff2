"""Data-parallel training across processes started by ``torchrun``.

    torchrun --nproc_per_node=2 train.py ...      # 2 processes; gloo on CPU, nccl on GPU

``torchrun`` sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` for every process it starts;
:func:`init_distributed` reads them and joins the process group. A plain ``python
train.py`` gets a one-process :class:`DistContext` for which every collective below is a
no-op, so the training loop has one code path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# Rank 0 evaluates (greedy decoding of the validation split) and writes checkpoints while
# the other ranks wait at a barrier, so collectives must outlast one evaluation.
BARRIER_TIMEOUT = timedelta(minutes=60)


class DistributedError(RuntimeError):
    """The distributed environment cannot be used as asked."""


@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"
    backend: str | None = None

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Only the main rank evaluates, reports progress and writes files."""
        return self.rank == 0

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def any(self, flag: bool) -> bool:
        """True on every rank if ``flag`` is true on any rank: ranks must agree to stop
        together, or the ones still training would wait for the others forever."""
        if not self.enabled:
            return flag
        t = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item() > 0)

    def broadcast_text(self, text: str | None) -> str:
        """The main rank's ``text`` on every rank (e.g. a tokenizer as JSON, so every rank
        tokenizes with exactly the same vocabulary)."""
        if not self.enabled:
            return text  # type: ignore[return-value]
        box = [text if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init_distributed(device: str) -> DistContext:
    """Join the process group when started by torchrun with more than one process.

    ``device`` is the device type asked for ("cpu" or "cuda"); with CUDA every process
    takes the GPU numbered by its ``LOCAL_RANK``.
    """
    if not launched_by_torchrun():
        return DistContext(device=device)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    kind = torch.device(device).type
    if kind == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise DistributedError(f"LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} CUDA device(s): "
                                   "use --nproc_per_node no larger than the number of GPUs")
        torch.cuda.set_device(local_rank)
        device, backend = f"cuda:{local_rank}", "nccl"
    elif kind == "cpu":
        backend = "gloo"
    else:
        raise DistributedError(f"multi-process training supports cpu (gloo) and cuda (nccl), not {kind}")
    dist.init_process_group(backend=backend, timeout=BARRIER_TIMEOUT)
    return DistContext(rank=rank, world_size=world, local_rank=local_rank, device=device, backend=backend)


def shard_batches(batches: list, rank: int, world_size: int) -> list:
    """Rank ``rank``'s disjoint share of one epoch's batches: every ``world_size``-th
    batch, cut to the same count on every rank (``len(batches) // world_size``).

    Equal counts matter: each optimiser step all-reduces gradients, so a rank with one
    batch more would wait for its partners forever. The at most ``world_size - 1``
    batches left over are skipped this epoch; the next epoch cuts and shuffles anew.
    With one process this is ``batches`` unchanged.
    """
    n = len(batches) // world_size
    return batches[rank::world_size][:n]
