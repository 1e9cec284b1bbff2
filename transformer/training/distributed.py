"""Data-parallel training across processes started by ``torchrun`` (or by
:func:`launch_processes`, which does what ``torchrun --standalone`` does), and stopping
them all together on SIGINT or SIGTERM.

    torchrun --nproc_per_node=2 train.py ...      # 2 processes; gloo on CPU, nccl on GPU

``torchrun`` sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` for every process it starts;
:func:`init_distributed` reads them and joins the process group. A plain ``python
train.py`` gets a one-process :class:`DistContext` for which every collective below is a
no-op, so the training loop has one code path.

``pick_device`` and ``plan_processes`` decide the device and how many processes fit on it;
``launch_processes`` starts them. Nothing here prints: a plan says what to tell the user in
its ``note``, and the command line prints it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# Rank 0 evaluates (greedy decoding of the validation split) and writes checkpoints while
# the other ranks wait at a barrier, so collectives must outlast one evaluation.
BARRIER_TIMEOUT = timedelta(minutes=60)
# set in the environment of the processes that ``launch_processes`` starts
LAUNCHED_BY_TRAIN_PY = "TRAIN_PY_PROCESSES"
# how long the launcher lets its processes save and exit after it forwarded them a signal,
# before it kills them: a stop saves one checkpoint, or gives up an evaluation first
SHUTDOWN_SECONDS = 120
# how long a rank other than 0 waits before it exits after an error (``leave_to_rank_0``)
OTHER_RANKS_WAIT_SECONDS = 10
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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

    def maximum(self, *values: int) -> list[int]:
        """Each of ``values``, the largest over all ranks, on every rank: one all-reduce for
        the decisions ranks must take together (out of time? stop, on which signal? save
        now?), or the ones still training would wait for the others forever."""
        if not self.enabled:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return [int(v) for v in t.tolist()]

    def gather(self, obj) -> list | None:
        """Every rank's ``obj`` in rank order on the main rank (None on the others), e.g.
        each rank's random-number state for the checkpoint only rank 0 writes."""
        if not self.enabled:
            return [obj]
        box = [None] * self.world_size if self.is_main else None
        dist.gather_object(obj, box, dst=0)
        return box

    def broadcast_text(self, text: str | None) -> str:
        """The main rank's ``text`` on every rank (e.g. a tokenizer as JSON, so every rank
        tokenizes with exactly the same vocabulary)."""
        if not self.enabled:
            return text  # type: ignore[return-value]
        box = [text if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """The module training steps run: ``model`` itself, or wrapped in DistributedDataParallel,
        whose backward pass averages the gradients over the ranks."""
        if not self.enabled:
            return model
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.local_rank] if torch.device(self.device).type == "cuda" else None
        # the positional table is a constant buffer: synced once at init, not every step
        return DistributedDataParallel(model, device_ids=ids, forward_sync_buffers=False)

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
            raise DistributedError(
                f"LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} CUDA device(s): "
                "use --nproc_per_node no larger than the number of GPUs"
            )
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


# ---------------------------------------------------------------- stopping on a signal


class Stopped(BaseException):
    """SIGINT or SIGTERM arrived while nothing could be saved yet (data loading, model
    building). A ``BaseException``, like ``KeyboardInterrupt``, so that no ``except
    Exception`` on the way mistakes it for an error."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopSignals:
    """SIGINT (Ctrl-C) and SIGTERM as a request to stop.

    Inside :meth:`deferred` (the training loop) a signal only sets :attr:`signum`, which the
    loop reads between optimiser steps, so that every rank stops at the same step and saves
    where it is. Outside it the first signal raises :class:`Stopped` at once. A second
    signal never raises: a launcher forwards the terminal's Ctrl-C to processes that got it
    already, and a second exception would cut short the first one's quiet exit.

        stop = StopSignals()
        with stop.installed():          # the previous handlers come back on the way out
            ...
    """

    def __init__(self) -> None:
        self.signum = 0  # the first signal received (or requested), 0 for none
        self._deferring = self._received = False

    @contextlib.contextmanager
    def installed(self):
        """This object's handlers for SIGINT and SIGTERM inside the block (in the main
        thread: Python allows signal handlers only there)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handle) for s in STOP_SIGNALS}
        try:
            yield self
        finally:
            # after a real signal the process is on its way out: a late forwarded one meets
            # this handler (which no longer raises) rather than a KeyboardInterrupt at exit
            if not self._received:
                for s, handler in previous.items():
                    signal.signal(s, handler)

    def request(self, signum: int = signal.SIGINT) -> None:
        """What a signal does, without one (a test, or code that wants the run to stop)."""
        first = not self.signum
        self.signum = self.signum or signum
        if first and not self._deferring:
            raise Stopped(signum)

    def _handle(self, signum: int, frame) -> None:
        self._received = True
        self.request(signum)

    @contextlib.contextmanager
    def deferred(self):
        """Signals only set :attr:`signum` inside this block."""
        before, self._deferring = self._deferring, True
        try:
            yield self
        finally:
            self._deferring = before


# ---------------------------------------------------------------- starting the processes


def fit_processes(wanted: int, device: str, n_devices: int, batch_tokens: int) -> tuple[int, int]:
    """(processes, batch tokens per process) for ``wanted`` processes of ``batch_tokens``.

    On a CPU every process gets its share of the cores. A GPU cannot be shared between
    training processes, so with fewer GPUs (``n_devices``) than ``wanted`` one process runs
    per GPU, each on a larger batch, so that a step still sees ``wanted * batch_tokens``
    tokens and the learning-rate schedule keeps its meaning."""
    if device == "cpu" or n_devices >= wanted:
        return wanted, batch_tokens
    return n_devices, round(batch_tokens * wanted / n_devices)


def pick_device(name: str) -> str:
    """The device --device names ("auto": cuda, then mps, then cpu); ``DistributedError``
    when the one asked for is not there."""
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if mps else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise DistributedError("--device cuda asked for, but no CUDA device is available")
    if name == "mps" and not mps:
        raise DistributedError("--device mps asked for, but MPS is not available")
    return name


@dataclass(frozen=True)
class ProcessPlan:
    """The processes a run trains on and each one's batch tokens; ``note`` says why they
    differ from those asked for (None when they do not)."""

    processes: int
    batch_tokens: int
    note: str | None = None


def plan_processes(wanted: int, device_name: str, batch_tokens: int) -> ProcessPlan:
    """``wanted`` processes of ``batch_tokens`` on the device --device names, fitted to it
    by ``fit_processes``."""
    device = pick_device(device_name)
    n_devices = torch.cuda.device_count() if device == "cuda" else 1  # a CPU's n is not used
    n, tokens = fit_processes(wanted, device, n_devices, batch_tokens)
    if n == wanted:
        return ProcessPlan(n, tokens)
    note = (
        f"{device}: {n} device(s) for {wanted} processes; training {n} process(es) of {tokens} "
        f"batch tokens, the same tokens per step"
    )
    return ProcessPlan(n, tokens, note)


def launched_by_train_py() -> bool:
    return bool(os.environ.get(LAUNCHED_BY_TRAIN_PY))


def launch_processes(script: str, script_args: list[str], processes: int, threads: int | None = None) -> int:
    """Run ``processes`` copies of ``script`` with torch's own launcher (what ``torchrun
    --standalone --nproc_per_node=N`` does: a local rendezvous and ``RANK``/``WORLD_SIZE``
    in each process's environment); each joins the process group in ``init_distributed``.
    Returns the run's exit code.

    Rank 0 keeps this terminal, so the output reads as a one-process run's; the other ranks
    write to log files in a temporary folder (a failure there is rank 0's to report, and
    their tracebacks of the broken connection would only bury its one line). A SIGINT or
    SIGTERM here is forwarded to every process (which saves and stops), and the launcher
    then shuts down torch's rendezvous (``shut_down_rendezvous``) and ends quietly with 128 +
    the signal's number, as a shell reports a signalled command. When the processes fail,
    rank 0's exit code is the run's."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    cores = max(1, (os.cpu_count() or 1) // processes)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads or cores))  # torch's launcher warns when it picks
    os.environ[LAUNCHED_BY_TRAIN_PY] = str(processes)
    for name in [n for n in logging.root.manager.loggerDict if n.startswith("torch.distributed")]:
        # its own lines about failed or signalled processes (each of its loggers has its own level)
        logging.getLogger(name).setLevel(logging.CRITICAL)
    others = ",".join(f"{rank}:3" for rank in range(1, processes))
    launcher = torchrun.get_args_parser().parse_args(
        [
            "--standalone",
            f"--nproc_per_node={processes}",
            "--redirects",
            others,
            "--shutdown_timeout",
            str(SHUTDOWN_SECONDS),
            script,
            *script_args,
        ]
    )
    handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    rendezvous: list = []
    try:
        with kept_rendezvous(rendezvous):
            torchrun.run(launcher)
    except SignalException as exc:
        shut_down_rendezvous(rendezvous)
        return 128 + int(exc.sigval)
    except ChildFailedError as exc:
        codes = {rank: failure.exitcode for rank, failure in exc.failures.items()}
        return next((c for c in (codes.get(0), *codes.values()) if c is not None and c > 0), 1)
    finally:
        for s, handler in handlers.items():  # torch's launcher leaves its own installed
            signal.signal(s, handler)
    return 0


@contextlib.contextmanager
def kept_rendezvous(handlers: list):
    """Every rendezvous handler torch's launcher makes inside the block, appended to
    ``handlers``: its ``launch_agent`` makes one with ``registry.get_rendezvous_handler`` and
    keeps it to itself."""
    from torch.distributed.elastic.rendezvous import registry

    make = registry.get_rendezvous_handler

    def keep(params):
        handlers.append(make(params))
        return handlers[-1]

    registry.get_rendezvous_handler = keep
    try:
        yield handlers
    finally:
        registry.get_rendezvous_handler = make


def shut_down_rendezvous(handlers: list) -> None:
    """Shut down the rendezvous that torch's launcher leaves running after a signal.

    ``launch_agent`` skips its handler's ``shutdown`` on a signal (that would close the
    rendezvous for every node of an elastic job), so the handler's keep-alive thread, a
    daemon, goes on sending a heartbeat through the rendezvous TCPStore every 5 s. Should the
    interpreter exit while that thread is inside the store's C++ call, Python ends the thread
    as it takes back the GIL, by unwinding it through pybind11's GIL guard, a destructor that
    may not throw: the launcher would abort ("terminate called without an active exception",
    SIGABRT) after its processes had saved. ``shutdown`` stops and joins that thread first
    (and closes the rendezvous, which no one else joins)."""
    for s in STOP_SIGNALS:  # a stop is under way: a second signal must not cut this short
        signal.signal(s, signal.SIG_IGN)
    for handler in handlers:
        # the heartbeat stops before anything can fail; closing a rendezvous that only
        # this launcher uses has no one to tell when it fails
        with contextlib.suppress(Exception):
            handler.shutdown()


def rank() -> int:
    """This process's rank under torchrun (0 without it)."""
    return int(os.environ.get("RANK", "0")) if launched_by_torchrun() else 0


def leave_to_rank_0(code: int) -> None:
    """On the ranks other than 0: exit with ``code`` and no message, after a short wait.

    Every training process meets the same bad input, and when rank 0 stops the others see
    their connection break; rank 0 alone says why. The wait lets rank 0 end first, so the
    launcher reports rank 0's exit code as the run's, not the broken connection's."""
    if rank() != 0:
        time.sleep(OTHER_RANKS_WAIT_SECONDS)
        raise SystemExit(code)
