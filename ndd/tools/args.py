"""The arguments of the ``ndd`` command (``ndd graph``, ``ndd bench``) and its usage error.

Bad arguments print ONE line ``ndd <command>: error: ...`` on stderr and exit with status 2.
"""
from __future__ import annotations

import argparse

GRAPH_EXAMPLE = """example:
  ndd graph examples/train_loader.py --steps 5 --iterations 3 --out ndd-graph-out
  ndd graph my_script.py --format dot > graph.dot

writes into --out: graph.txt (recorded + compiled graphs, passes, node median/p90 times),
graph.svg, graph.png, timeline.png, trace.json (open in https://ui.perfetto.dev), report.html.
Arguments after SCRIPT (other than the options above) are passed to the script; put them
after "--" if they clash with ndd's own options."""

BENCH_EXAMPLE = """example:
  ndd bench --pipeline train --mode eager,deferred,compile --batch-size 32 --epochs 3
  ndd bench --data photos/ --compare dali --json results.json --plot results.png

modes run interleaved (epoch 1 of every mode, then epoch 2, ...); the table shows images/s
(min / median / max over the measured epochs) and each mode's median relative to the first."""


class UsageError(Exception):
    """A bad command-line argument (reported on one line, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints the whole usage otherwise)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ndd", description="ndd command-line tools.",
                epilog="run 'ndd graph --help' or 'ndd bench --help' for examples",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="{graph,bench}", parser_class=_Parser)

    g = sub.add_parser("graph", help="run a script and show the graphs ndd compiled for it",
                       description="Run SCRIPT like 'python SCRIPT args' while recording every "
                                   "compiled plan and per-node timings.",
                       epilog=GRAPH_EXAMPLE, allow_abbrev=False,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("script", help="the Python script to run")
    g.add_argument("--out", default="ndd-graph-out", help="output folder (default: %(default)s)")
    g.add_argument("--iterations", type=int, default=None, metavar="N",
                   help="stop the script after N reader batches (ndd.readers.File)")
    g.add_argument("--view", choices=("recorded", "compiled", "both"), default="both",
                   help="graph to show: as recorded, as compiled, or compiled with removed "
                        "nodes greyed and the pass notes (default: both)")
    g.add_argument("--format", choices=("text", "dot", "json"), default=None,
                   help="print only this artifact to stdout (the script's prints go to stderr) "
                        "and write no files")

    b = sub.add_parser("bench", help="images/s of a pipeline in each evaluation mode",
                       description="Benchmark a decoding pipeline over an image folder.",
                       epilog=BENCH_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("--pipeline", choices=("train", "val", "decode"), default="train",
                   help="built-in pipeline (default: %(default)s)")
    b.add_argument("--script", default=None,
                   help="file defining pipeline(api, jpegs) -> Batch (replaces --pipeline)")
    b.add_argument("--data", default=None,
                   help="image folder with class sub-folders (default: the sample dataset)")
    b.add_argument("--photos", default="imagenet", choices=["imagenet", "progressive-heavy"],
                   help="which sample photos to build when --data is not given: 'imagenet' "
                        "(mostly baseline 4:2:0 JPEGs, as ImageNet) or 'progressive-heavy' "
                        "(25%% progressive, much 4:4:4; decode-bound) (default: imagenet)")
    b.add_argument("--num-images", type=int, default=256,
                   help="images of the built sample dataset (default: %(default)s)")
    b.add_argument("--mode", default="eager,deferred,compile",
                   help="comma-separated: eager, deferred, compile (default: %(default)s)")
    b.add_argument("--batch-size", type=int, default=32)
    b.add_argument("--threads", type=int, default=None, help="ndd.set_num_threads(N)")
    b.add_argument("--epochs", type=int, default=3, help="measured epochs per mode")
    b.add_argument("--warmup", type=int, default=1, help="unmeasured epochs per mode first")
    b.add_argument("--compare", default="",
                   help="comma-separated: dali (DALI dynamic mode eager + capture), torchvision")
    b.add_argument("--breakdown", action="store_true",
                   help="also print, per ndd mode, the measured CPU per image in decode, "
                        "resample, normalize, Python, IPC, and each worker's idle time")
    b.add_argument("--floor", action="store_true",
                   help="also time the kernel floor (compile mode's own kernels on the same "
                        "images, windows and processes as a tight loop) and print compile "
                        "mode's fraction of it")
    b.add_argument("--json", default=None, metavar="FILE", help="write the results as JSON")
    b.add_argument("--plot", default=None, metavar="FILE", help="write a bar chart (PNG)")
    return p
