"""Per-op CPU time: each ndd op against DALI 2.4's CPU operator, in process CPU seconds.

The companion of ``ops_vs_dali.py`` for a shared, loaded machine: wall times there depend on
how the scheduler treats the threads of each call, the process CPU time a call costs (all
threads, ``time.process_time``) much less. Same cases (``benchmarks/op_cases``), same thread
count for both backends, calls interleaved; prints the medians of both measures per case.

    python benchmarks/ops_cpu_vs_dali.py --families geometry --cases clahe --reps 9
"""

import argparse
import importlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ops_vs_dali import BACKENDS, families  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--families", default="")
    p.add_argument("--cases", default="", help="only cases whose name contains this text")
    args = p.parse_args(argv)
    mods = {name: importlib.import_module(path) for name, path in BACKENDS.items()}
    for m in mods.values():
        m.set_num_threads(args.threads)
    for fam in families(args.families):
        for case in fam.cases():
            if args.cases and args.cases not in case.name:
                continue
            arrays, layout = case.make()
            cpu = {n: [] for n in mods}
            wall = {n: [] for n in mods}
            try:
                for r in range(args.reps + 1):
                    order = list(mods.items())
                    for name, m in order if r % 2 == 0 else reversed(order):
                        batch = m.as_batch(arrays, layout=layout)
                        t0, c0 = time.perf_counter(), time.process_time()
                        out = case.call(m, batch)
                        for o in out if isinstance(out, (tuple, list)) else (out,):
                            o.evaluate()
                        if r:                       # the first round warms up
                            cpu[name].append(time.process_time() - c0)
                            wall[name].append(time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - one failing case must not hide the rest
                print(f"{case.name}: failed: {exc!r}")
                continue
            c = {n: statistics.median(v) * 1e3 for n, v in cpu.items()}
            w = {n: statistics.median(v) * 1e3 for n, v in wall.items()}
            print(f"{case.name:<46} cpu ndd {c['ndd']:8.2f} dali {c['dali']:8.2f} "
                  f"dali/ndd {c['dali'] / c['ndd']:5.2f} | wall ndd {w['ndd']:8.2f} "
                  f"dali {w['dali']:8.2f} dali/ndd {w['dali'] / w['ndd']:5.2f}", flush=True)


if __name__ == "__main__":
    main()
