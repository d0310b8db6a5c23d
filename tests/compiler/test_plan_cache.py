"""The plan cache: a loop recording the same graph each iteration compiles once, with the same
results as compiling afresh."""
import numpy as np

import ndd
from compiler import pipeline
from compiler.ir import Graph
from compiler.signature import graph_signature


def _body(x):
    y = ndd.cast(x, dtype=ndd.float32) * 2.0 + 1.0
    return ndd.flip(y, horizontal=1)


def test_same_graph_compiles_once_and_gives_same_results():
    pipeline.clear_plan_cache()
    rng = np.random.default_rng(0)
    outs = []
    for _ in range(5):
        data = [rng.integers(0, 255, (4, 5, 3), dtype=np.uint8) for _ in range(3)]
        with ndd.EvalMode.deferred:
            out = _body(ndd.as_batch(data, layout="HWC"))
            got = [np.asarray(t) for t in out]
        ref = [np.flip(d.astype(np.float32) * 2.0 + 1.0, axis=1) for d in data]
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
        outs.append(got)
    assert pipeline.cache_stats["misses"] == 1
    assert pipeline.cache_stats["hits"] == 4


def test_signature_ignores_seeds_but_not_arguments():
    with ndd.EvalMode.deferred:
        a = ndd.random.uniform(batch_size=2, range=(0, 1))
        b = ndd.random.uniform(batch_size=2, range=(0, 1))
        c = ndd.random.uniform(batch_size=2, range=(0, 2))
        d = ndd.random.uniform(batch_size=3, range=(0, 1))
    sig = [graph_signature(Graph.from_outputs([v._value])) for v in (a, b, c, d)]
    assert sig[0] == sig[1]
    assert sig[0] != sig[2] and sig[0] != sig[3]


def test_cache_is_bounded():
    pipeline.clear_plan_cache()
    for k in range(pipeline.PLAN_CACHE_SIZE + 10):
        with ndd.EvalMode.deferred:
            x = ndd.as_batch([np.zeros((2, 2), np.float32)]) * float(k)
            x.evaluate()
    assert len(pipeline._cache) <= pipeline.PLAN_CACHE_SIZE
