"""Attention explorer: translate a sentence and look inside the Transformer while it does.

    python app.py [--checkpoint checkpoints/en-it] [--host 127.0.0.1] [--port 7860]
    python app.py --checkpoint checkpoints/en-it --checkpoint models/opus-mt-en-it   # two models, a switch

The entry point a Hugging Face Space runs. The page itself is the ``explorer`` package
(:mod:`explorer.page`); this file reads the flags, loads the model and serves it.

Gradio and the explorer are imported only once the flags have been checked and the
model has loaded (the import alone takes seconds), so a bad flag or a busy port is
reported at once.
"""

from __future__ import annotations

import logging
import os
import socket
import sys

from transformer.cli import DEFAULT_CHECKPOINT, ArgumentParser, fail, load_translator_or_exit, port_number, whole_number

__all__ = ["main", "parse_args"]
log = logging.getLogger("app")


def parse_args(argv=None):
    # environment defaults are strings, which argparse passes through the same type checks as flags
    p = ArgumentParser(prog="python app.py", description="Serve the attention explorer (a Gradio app).")
    p.add_argument(
        "--checkpoint",
        action="append",
        help="checkpoint directory or hub repo id (env CHECKPOINT, several separated by commas); "
        "repeat it to serve several models, each on its own page with a switch between them",
    )
    p.add_argument(
        "--host",
        default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        help="interface to listen on (env GRADIO_SERVER_NAME; 0.0.0.0 for all)",
    )
    p.add_argument(
        "--port",
        type=port_number,
        default=os.environ.get("GRADIO_SERVER_PORT", "7860"),
        help="port to listen on (env GRADIO_SERVER_PORT)",
    )
    p.add_argument(
        "--concurrency",
        type=whole_number(1),
        default=os.environ.get("APP_CONCURRENCY", "2"),
        help="requests of the other model endpoints (What if?, analyses, beam) run at once "
        "(env APP_CONCURRENCY); more queue up. Translate has its own queue (--max-batch)",
    )
    p.add_argument(
        "--max-batch",
        type=whole_number(1),
        default=os.environ.get("APP_MAX_BATCH", "8"),
        help="most sentences traced together when visitors translate at the same time "
        "(env APP_MAX_BATCH; 1 turns batching off)",
    )
    p.add_argument(
        "--torch-threads",
        type=whole_number(0),
        default=os.environ.get("APP_TORCH_THREADS", "0"),
        help="torch CPU threads per process, 0 = torch's default (env APP_TORCH_THREADS)",
    )
    p.add_argument(
        "--lens-on-demand",
        choices=("auto", "always", "never"),
        default=os.environ.get("APP_LENS_ON_DEMAND", "auto"),
        help="when the logit lens is computed (env APP_LENS_ON_DEMAND): auto, with every Translate for a "
        "target vocabulary of at most 50,000 tokens and only when its section opens for a larger one "
        "(NLLB-200's 256k); always only when it opens (a faster Translate); never, with every Translate",
    )
    p.add_argument(
        "--class-db",
        default=None,
        metavar="PATH",
        help="the SQLite file that keeps classes, their questions and answers (env EXPLORER_CLASS_DB; default "
        "~/.cache/inside-the-transformer/classes.sqlite3; on a Space with persistent storage: /data/classes.sqlite3)",
    )
    args = p.parse_args(argv)
    if not args.checkpoint:
        args.checkpoint = [c.strip() for c in os.environ.get("CHECKPOINT", DEFAULT_CHECKPOINT).split(",") if c.strip()]
    return args


def check_can_listen(host: str, port: int) -> None:
    """Exit with a one-line message unless a server can listen on ``host:port`` now.

    Binding a socket and letting it go is what Gradio itself tries before it starts (with
    SO_REUSEADDR, so a port in TIME_WAIT from a stopped server counts as free); doing it
    here says "port in use" before the model loads rather than after."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1] as Gradio takes it
    try:
        infos = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        fail(f"--host {host}: not an address of this machine ({exc.strerror})")
    family, kind, proto, _, address = infos[0]
    try:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        fail(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})")


def open_class_store(path: str | None) -> None:
    """Open the classes' store (``explorer.classroom``, stdlib only) before the model loads, so a
    path where no file can be kept exits at once with one line."""
    import sqlite3

    from explorer.classroom import default_db_path, use_store

    try:
        use_store(path)
    except (OSError, sqlite3.Error) as exc:
        fail(f"--class-db {path or default_db_path()}: cannot keep classes there ({exc})")


def main(argv=None) -> int:
    """Serve until stopped; bad flags, a port that is taken or a missing/corrupt checkpoint
    exit with code 2 and a one-line message (``transformer.cli``), before the slow part."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    check_can_listen(args.host, args.port)
    open_class_store(args.class_db)
    translators = []
    for name in args.checkpoint:
        tr = load_translator_or_exit(name)
        where = str(tr.directory)
        log.info("loaded checkpoint %s", where if where == str(name) else f"{name} ({where})")
        if args.lens_on_demand != "auto":
            tr.lens_in_trace = args.lens_on_demand == "never"
        translators.append(tr)
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    # Gradio folds every finished request into its monitoring summary (a pandas table of up to
    # 10,000 requests), by default after each one: under a class's many small requests that costs
    # more than the requests themselves, and Translate waits for it. Once per 1,000 is plenty.
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
    from explorer.page import build_ui
    from explorer.assets import page_css
    from explorer.blocks import page_head
    from explorer.downloads import prune_trace_files

    pruned = prune_trace_files()
    if pruned:
        log.info("removed %d trace files older than a day", pruned)
    demo = build_ui(translators, max_batch=args.max_batch)
    demo.queue(default_concurrency_limit=args.concurrency)
    try:
        demo.launch(server_name=args.host, server_port=args.port, show_error=False, css=page_css(), head=page_head())
    except OSError as exc:  # the port was taken while the model loaded
        fail(f"--port {args.port}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
