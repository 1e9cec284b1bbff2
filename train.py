"""Train an encoder-decoder Transformer for translation.

    python train.py                                           # the shipped en->it model (preset base)
    python train.py --preset tiny --out runs/tiny             # a smoke run
    python train.py --out runs/base --resume                  # continue the run in runs/base where it stopped
    python train.py --processes 2 --out runs/two              # data-parallel over 2 processes of 1 thread each
    torchrun --nproc_per_node=2 train.py --out runs/ddp       # the same, started by torchrun (or on 2 GPUs)

Output directory layout:
    OUT/epochs/epoch-NNN/     checkpoint after each epoch (+ train_state.pt for --resume)
    OUT/mid-epoch/            checkpoint within an epoch: at a stop, and every --save-every-minutes
    OUT/best/                 the checkpoint with the best validation chrF (this is what ships)
    OUT/snapshots/epoch-NNN/  small fp16 checkpoints after chosen epochs (copied into best/snapshots/)
    OUT/tensorboard/          TensorBoard scalars
    OUT/history.json          one record per evaluation
    OUT/run.json              the flags the run was started with (what --resume goes on with)

Ctrl-C (or SIGTERM) stops every process after the step in progress, saves, and ends with
one line that says how to continue (exit code 130, or 143 for SIGTERM).

The loop itself lives in ``transformer.training.loop``, what it shows in
``transformer.training.progress``, the processes in ``transformer.training.distributed``, the
flags (made from the dataclasses ``RunOptions``, ``Preset``, ``TransformerConfig`` and
``TrainSettings``) and the run they start in ``transformer.cli.training_run``; this file turns
errors into exit codes.
"""

from __future__ import annotations

import signal
import sys

if __name__ == "__main__":  # until main() takes over, a stop ends as quietly as one later on
    for _signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signal, lambda signum, frame: sys.exit(128 + signum))

import contextlib
import traceback
from pathlib import Path

import torch.distributed

from transformer.cli import EXIT_USAGE, fail, one_line_warnings
from transformer.cli.training_run import parse_args, resume_command, start
from transformer.core.checkpoint import CheckpointError
from transformer.core.tokenizer import VocabularyError
from transformer.training.data import DataError
from transformer.training.distill import DistillError
from transformer.training.distributed import DistributedError, Stopped, StopSignals, leave_to_rank_0, rank
from transformer.training.progress import stop_line
from transformer.training.loop import TrainingStopped
from transformer.training.errors import TrainingError, TrainingWarning


def main(argv=None) -> int:
    args = parse_args(argv)
    stop = StopSignals()
    try:
        # only rank 0 stops at once on a signal; the others note it, and the next step's
        # all-reduce stops them all together (or their connection to rank 0 breaks)
        with (
            stop.installed(),
            stop.deferred() if rank() else contextlib.nullcontext(),
            one_line_warnings(TrainingWarning),
        ):
            return start(args, argv, stop, __file__)
    except Stopped as exc:  # before anything was saved (rank 0, or the launching process)
        print(
            f"stopped before training resumed; {args.out} is as it was; continue with: {resume_command(args.out)}"
            if args.resume
            else "stopped before training started; nothing was saved",
            file=sys.stderr,
        )
        return 128 + exc.signum
    except TrainingStopped as exc:
        if rank() == 0:
            # the folder of the stage that stopped; --resume of the whole run goes on in either stage
            print(stop_line(exc, exc.out or Path(args.out), resume_command(args.out)), file=sys.stderr)
        return 128 + exc.signum
    except VocabularyError as exc:
        leave_to_rank_0(EXIT_USAGE)
        if exc.n_characters is None:
            fail(f"--vocab-size: {exc}")
        fail(
            f"--vocab-size {exc.vocab_size} is too small for this corpus: its {exc.n_specials} special tokens and "
            f"{exc.n_characters} distinct characters need at least {exc.needed}"
        )
    except (TrainingError, DataError, CheckpointError, DistillError, DistributedError) as exc:
        leave_to_rank_0(EXIT_USAGE)
        fail(str(exc))
    except Exception as exc:
        if rank() == 0:
            raise
        if stop.signum:  # rank 0 stopped on the same signal, which broke this rank's connection
            return 128 + stop.signum
        if not isinstance(exc, torch.distributed.DistError):  # a peer that failed breaks it too: rank 0 says why
            traceback.print_exc()  # into this rank's own output
        leave_to_rank_0(1)


if __name__ == "__main__":
    sys.exit(main())
