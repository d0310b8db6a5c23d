"""Noise ops (``ndd.noise.*``): gaussian, salt-and-pepper and shot noise added to the input.

Random ops: per-sample seeds are drawn from the RNG when the call is made (docs/semantics.md,
"Random numbers"). Source: DALI 2.4 ``noise.gaussian`` / ``noise.salt_and_pepper`` /
``noise.shot`` (argument names and defaults from its schema).
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register

_SEEDS = ArgSpec("_seeds", "any", None)
_RANDOM = frozenset({"random"})


def _same(metas, args):
    return [metas[0]]


register(OpSchema(
    "noise.gaussian", ("input",), (
        ArgSpec("mean", "float", 0.0, tensor=True, doc="Mean of the distribution."),
        ArgSpec("stddev", "float", 1.0, tensor=True,
                doc="Standard deviation of the distribution."),
        _SEEDS),
    _same, traits=_RANDOM, public_name="noise.gaussian",
    doc="Adds gaussian noise ``N(mean, stddev)`` to every element; the output has the input's "
        "shape, type and layout (integers round half away from zero and saturate). Source: "
        "DALI ``noise.gaussian``."))

register(OpSchema(
    "noise.salt_and_pepper", ("input",), (
        ArgSpec("pepper_val", "float", None, tensor=True,
                doc="Value of \"pepper\" (default: -1.0 for floats, the type's minimum for "
                    "integers)."),
        ArgSpec("per_channel", "bool", False,
                doc="Draw the noise for every channel independently (the layout's C axis, or "
                    "the last axis when there is no layout); otherwise a pixel's channels are "
                    "kept or replaced together."),
        ArgSpec("prob", "float", 0.05, tensor=True,
                doc="Probability of an output value to take the salt or pepper value."),
        ArgSpec("salt_val", "float", None, tensor=True,
                doc="Value of \"salt\" (default: 1.0 for floats, the type's maximum for "
                    "integers)."),
        ArgSpec("salt_vs_pepper", "float", 0.5, tensor=True,
                doc="Probability of a corrupted value to be salt."),
        _SEEDS),
    _same, traits=_RANDOM, public_name="noise.salt_and_pepper",
    doc="Replaces random values with \"salt\" or \"pepper\"; the output has the input's "
        "shape, type and layout. Source: DALI ``noise.salt_and_pepper``."))

register(OpSchema(
    "noise.shot", ("input",), (
        ArgSpec("factor", "float", 20.0, tensor=True,
                doc="Value of one event: ``out = poisson(max(0, in / factor)) * factor``; 0 "
                    "leaves the input unchanged."),
        _SEEDS),
    _same, traits=_RANDOM, public_name="noise.shot",
    doc="Applies shot (Poisson) noise: each element is the count of events of a Poisson "
        "process whose mean is ``in / factor``, times ``factor``; the output has the input's "
        "shape, type and layout. Source: DALI ``noise.shot``."))
