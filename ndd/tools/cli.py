"""The ``ndd`` command: ``ndd graph`` (what the compiler made of a script) and ``ndd bench``
(images/s of the standard pipelines in each evaluation mode, optionally next to DALI).

Bad arguments print ONE line ``ndd <command>: error: ...`` on stderr and exit with status 2.
"""
from __future__ import annotations

import os
import sys

from ndd.tools import bench, graph, tfrecord_index
from ndd.tools.args import UsageError, build_parser


def _check_out_folder(out: str) -> None:
    """``--out`` must be a folder, or creatable as one (its nearest existing parent a
    writable folder)."""
    if not out:
        raise UsageError("--out is empty; expected a folder (created if missing)")
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out!r} is a file; expected a folder (created if missing)")
    parent = os.path.abspath(out)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise UsageError(f"--out {out!r}: cannot create a folder there ({parent!r} is not a "
                         f"writable folder)")


def _graph(ns, extra) -> int:
    if os.path.isdir(ns.script):
        raise UsageError(f"script {ns.script!r} is a folder; expected a Python file")
    if not os.path.isfile(ns.script):
        raise UsageError(f"script {ns.script!r} not found")
    if ns.iterations is not None and ns.iterations < 1:
        raise UsageError(f"--iterations must be a positive integer, got {ns.iterations}")
    if ns.format is None:
        _check_out_folder(ns.out)
    session = graph.run_script(ns.script, extra, ns.iterations,
                                    stdout_to_stderr=ns.format is not None)
    if ns.format == "text":
        sys.stdout.write(graph.graph_text(session, ns.view))
    elif ns.format == "dot":
        sys.stdout.write(graph.dot_text(session, ns.view))
    elif ns.format == "json":
        sys.stdout.write(graph.json_text(session, ns.view))
    else:
        paths = graph.write_artifacts(session, ns.out, ns.view)
        stop = " (stopped by --iterations)" if session.stopped_early else ""
        print(f"ndd graph: {len(session.plans)} distinct plan(s), {len(session.spans)} node "
              f"runs{stop}; wrote {ns.out}/ (graph.txt graph.svg graph.png timeline.png "
              f"trace.json report.html; drawn with {paths['renderer']})", file=sys.stderr)
    if session.error:
        print(f"ndd graph: the script failed:\n{session.error}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    """Entry point of the ``ndd`` console script. Returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    cmd = argv[0] if argv else None
    try:
        if cmd == "tfrecord-index":
            return tfrecord_index.main(argv[1:])
        if cmd == "graph":
            # options of ours anywhere; everything else is the script's
            ns, extra = parser.parse_known_args(argv)
            if "--" in extra:
                extra.remove("--")
            return _graph(ns, extra)
        ns = parser.parse_args(argv)
        if ns.command is None:
            parser.print_help()
            return 2
        return bench.run(ns)
    except UsageError as exc:
        prog = f"ndd {cmd}" if cmd in ("graph", "bench") else "ndd"
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
