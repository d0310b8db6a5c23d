"""Random ops and generators (``ndd.random``).

Random ops need an explicit ``batch_size`` to produce a Batch (there is no pipeline batch size);
without it they return a Tensor. Source: DALI ``random.*``.
"""

import inspect as _inspect

from ndd._invoke import invoke as _invoke
from ndd._op_functions import make_function as _make_function
from ndd._rng import RNG, get_default_rng, set_seed

uniform = _make_function("random.uniform", module="ndd.random")
normal = _make_function("random.normal", module="ndd.random")
coin_flip = _make_function("random.coin_flip", module="ndd.random")
beta = _make_function("random.beta", module="ndd.random")
_choice_doc = _make_function("random.choice").__doc__


def choice(a, shape_like=None, /, *, batch_size=None, device=None, p=None, shape=None, rng=None):
    inputs = () if shape_like is None else (shape_like,)
    if hasattr(a, "tolist") and not isinstance(a, (int, float)):
        a = a.tolist()
    return _invoke("random.choice", inputs, {"a": a, "p": p, "shape": shape}, device=device,
                  batch_size=batch_size, rng=rng)


choice.__doc__ = _choice_doc
__all__ = ["RNG", "get_default_rng", "set_seed", "uniform", "normal", "coin_flip", "choice",
           "beta"]
