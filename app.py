"""Attention explorer: translate a sentence and look inside the Transformer while it does.

    python app.py [--checkpoint checkpoints/en-it] [--host 127.0.0.1] [--port 7860]

The entry point a Hugging Face Space runs. The page itself is the ``explorer`` package
(:mod:`explorer.app`); this file reads the flags, loads the model and serves it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from explorer.app import App, build_ui
from explorer.assets import page_css
from explorer.downloads import prune_trace_files
from transformer.cli import fail, load_translator_or_exit

__all__ = ["App", "build_ui", "main", "parse_args"]
log = logging.getLogger("app")
DEFAULT_CHECKPOINT = "checkpoints/en-it"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Serve the attention explorer (a Gradio app).")
    p.add_argument("--checkpoint", default=os.environ.get("CHECKPOINT", DEFAULT_CHECKPOINT),
                   help="checkpoint directory or hub repo id (env CHECKPOINT)")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="interface to listen on (env GRADIO_SERVER_NAME; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                   help="port to listen on (env GRADIO_SERVER_PORT)")
    p.add_argument("--concurrency", type=int, default=int(os.environ.get("APP_CONCURRENCY", "2")),
                   help="requests of the other model endpoints (What if?, analyses, beam) run at once "
                        "(env APP_CONCURRENCY); more queue up. Translate has its own queue (--max-batch)")
    p.add_argument("--max-batch", type=int, default=int(os.environ.get("APP_MAX_BATCH", "8")),
                   help="most sentences traced together when visitors translate at the same time "
                        "(env APP_MAX_BATCH; 1 turns batching off)")
    p.add_argument("--torch-threads", type=int, default=int(os.environ.get("APP_TORCH_THREADS", "0")),
                   help="torch CPU threads per process, 0 = torch's default (env APP_TORCH_THREADS)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    """Serve until stopped; bad flags or a missing/corrupt checkpoint exit with code 2 and a
    one-line message (``transformer.cli``)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    if args.concurrency < 1 or args.max_batch < 1 or args.torch_threads < 0:
        fail("--concurrency and --max-batch must be >= 1 and --torch-threads >= 0")
    tr = load_translator_or_exit(args.checkpoint)
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    pruned = prune_trace_files()
    if pruned:
        log.info("removed %d trace files older than a day", pruned)
    demo = build_ui(tr, max_batch=args.max_batch)
    demo.queue(default_concurrency_limit=args.concurrency)
    demo.launch(server_name=args.host, server_port=args.port, show_error=False, css=page_css())
    return 0


if __name__ == "__main__":
    sys.exit(main())
