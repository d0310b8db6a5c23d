"""Per-op speed: each ndd op against DALI 2.4's CPU operator on the same batch, interleaved.

Cases live in ``benchmarks/op_cases/<family>.py``; each module defines ``cases()`` returning a
list of :class:`op_cases.Case` (a name, a function building the batch as numpy arrays plus a
layout, and a call ``fn(mod, batch)`` written once against the shared API, where ``mod`` is
``ndd`` or ``nvidia.dali.experimental.dynamic``). Both backends run eagerly on the CPU with the
same thread count; calls alternate between backends so machine noise hits both alike.

    python benchmarks/ops_vs_dali.py --threads 2 --reps 15 [--families filters,color] [--md]

Prints per case the median milliseconds per batch of each backend and the ratio DALI / ndd
(above 1: ndd is faster). ``--md`` prints the table as Markdown for ``docs/benchmarks.md``.
"""

import argparse
import importlib
import os
import pkgutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import op_cases  # noqa: E402

BACKENDS = {"ndd": "ndd", "dali": "nvidia.dali.experimental.dynamic"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=15, help="timed calls per backend and case")
    p.add_argument("--families", default="", help="comma-separated op_cases modules (all)")
    p.add_argument("--cases", default="", help="only cases whose name contains this text")
    p.add_argument("--md", action="store_true", help="print a Markdown table")
    return p.parse_args(argv)


def families(selected):
    names = sorted(m.name for m in pkgutil.iter_modules(op_cases.__path__))
    if selected:
        wanted = set(selected.split(","))
        unknown = wanted - set(names)
        if unknown:
            raise SystemExit(f"unknown families {sorted(unknown)}; have {names}")
        names = [n for n in names if n in wanted]
    return [importlib.import_module(f"op_cases.{n}") for n in names]


def run_once(mod, case, arrays, layout):
    """One call on a fresh batch handle; returns seconds (evaluation included)."""
    batch = mod.as_batch(arrays, layout=layout) if layout else mod.as_batch(arrays)
    t0 = time.perf_counter()
    out = case.call(mod, batch)
    for o in out if isinstance(out, (tuple, list)) else (out,):
        o.evaluate()
    return time.perf_counter() - t0


def measure(case, mods, reps):
    arrays, layout = case.make()
    times = {name: [] for name in mods}
    for name, mod in mods.items():          # warm-up: compile caches, thread pools
        run_once(mod, case, arrays, layout)
    for r in range(reps):
        order = list(mods.items()) if r % 2 == 0 else list(reversed(mods.items()))
        for name, mod in order:
            times[name].append(run_once(mod, case, arrays, layout))
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main(argv=None):
    args = parse_args(argv)
    mods = {}
    for name, path in BACKENDS.items():
        try:
            mod = importlib.import_module(path)
            mod.set_num_threads(args.threads)
            mods[name] = mod
        except Exception as exc:  # noqa: BLE001 - a missing backend is reported, not fatal
            print(f"skipping backend {name!r}: {exc!r}")
    rows = []
    for fam in families(args.families):
        for case in fam.cases():
            if args.cases and args.cases not in case.name:
                continue
            try:
                ms = measure(case, mods, args.reps)
            except Exception as exc:  # noqa: BLE001 - one failing case must not hide the rest
                print(f"{fam.__name__.split('.')[-1]}/{case.name}: failed: {exc!r}")
                continue
            ratio = ms["dali"] / ms["ndd"] if "dali" in ms and "ndd" in ms else float("nan")
            rows.append((fam.__name__.split(".")[-1], case.name, ms.get("ndd"), ms.get("dali"),
                         ratio))
            if not args.md:
                print(f"{rows[-1][0]:>12} {case.name:<40} ndd {ms.get('ndd', float('nan')):8.2f} ms"
                      f"  dali {ms.get('dali', float('nan')):8.2f} ms  dali/ndd {ratio:5.2f}",
                      flush=True)
    if args.md:
        print(f"| family | case | ndd ms | DALI ms | DALI / ndd |\n|---|---|---:|---:|---:|")
        for fam, name, a, b, r in rows:
            print(f"| {fam} | {name} | {a:.2f} | {b:.2f} | {r:.2f} |")
    slower = [r for r in rows if r[4] < 1.0]
    print(f"{len(rows)} cases, {len(slower)} where ndd is slower than DALI"
          + (": " + ", ".join(f"{f}/{n}" for f, n, *_ in slower) if slower else ""))


if __name__ == "__main__":
    main()
