"""Random ops (``ndd.random.*``). Seeds are drawn from the RNG when the call is made."""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register

_SHAPE = ArgSpec("shape", "int[]", None, tensor=True,
                 doc="Shape of each sample (default: a scalar).")
_SEEDS = ArgSpec("_seeds", "any", None)


def _infer(default_dtype):
    def infer(metas, args):
        shape = args.get("shape")
        if metas:   # shape_like input
            nd = metas[0].ndim
        else:
            nd = len(shape) if shape is not None else 0
        dt = args.get("dtype") or default_dtype
        return [ValueMeta(dtype=dt, ndim=nd, layout="")]
    return infer


def _choice_infer(metas, args):
    a = args.get("a")
    shape = args.get("shape")
    nd = len(shape) if shape is not None else 0
    dt = "int32"
    if isinstance(a, tuple) and any(isinstance(x, float) for x in a):
        dt = "float32"
    return [ValueMeta(dtype=dt, ndim=nd, layout="")]


_RANDOM = frozenset({"random"})

register(OpSchema(
    "random.uniform", ("shape_like",), (
        ArgSpec("range", "float[]", (-1.0, 1.0), tensor=True, length=2,
                doc="[min, max) of the distribution."),
        ArgSpec("values", "float[]", None, tensor=True,
                doc="Discrete values to choose from uniformly (overrides range)."),
        _SHAPE, ArgSpec("dtype", "dtype", None, doc="Output type (default float32)."), _SEEDS),
    _infer("float32"), traits=_RANDOM, min_inputs=0, public_name="random.uniform",
    doc="Random numbers uniformly distributed in ``range`` = [min, max) (or drawn from "
        "``values``). Source: DALI ``random.uniform``."))

register(OpSchema(
    "random.normal", ("shape_like",), (
        ArgSpec("mean", "float", 0.0, tensor=True, doc="Mean of the distribution."),
        ArgSpec("stddev", "float", 1.0, tensor=True, doc="Standard deviation."),
        _SHAPE, ArgSpec("dtype", "dtype", None, doc="Output type (default float32)."), _SEEDS),
    _infer("float32"), traits=_RANDOM, min_inputs=0, public_name="random.normal",
    doc="Normally distributed random numbers. Source: DALI ``random.normal``."))

register(OpSchema(
    "random.coin_flip", ("shape_like",), (
        ArgSpec("probability", "float", 0.5, tensor=True,
                doc="Probability of a 1 (in [0, 1])."),
        _SHAPE, ArgSpec("dtype", "dtype", None, doc="Output type (default int32)."), _SEEDS),
    _infer("int32"), traits=_RANDOM, min_inputs=0, public_name="random.coin_flip",
    doc="Random 0/1 values (Bernoulli trials); 1 with ``probability``. Source: DALI "
        "``random.coin_flip``."))

register(OpSchema(
    "random.choice", ("shape_like",), (
        ArgSpec("a", "any", REQUIRED, doc="An int n (choose from 0..n-1) or a list of values."),
        ArgSpec("p", "float[]", None, tensor=True, doc="Probabilities (default: uniform)."),
        _SHAPE, _SEEDS),
    _choice_infer, traits=_RANDOM, min_inputs=0, public_name="random.choice",
    doc="Random choice from ``a``: an int n means values 0..n-1, a list means its elements; "
        "``p`` gives probabilities. Source: DALI ``random.choice``."))

register(OpSchema(
    "random.beta", ("shape_like",), (
        ArgSpec("alpha", "float", 1.0, tensor=True, doc="Alpha (> 0)."),
        ArgSpec("beta", "float", 1.0, tensor=True, doc="Beta (> 0)."),
        _SHAPE, ArgSpec("dtype", "dtype", None, doc="Output type (default float32)."), _SEEDS),
    _infer("float32"), traits=_RANDOM, min_inputs=0, public_name="random.beta",
    doc="Beta-distributed random numbers in [0, 1]. Source: DALI ``random.beta``."))
