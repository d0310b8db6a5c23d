"""Random ops and generators (``ndd.random``).

Random ops need an explicit ``batch_size`` to produce a Batch (there is no pipeline batch size);
without it they return a Tensor. Source: DALI ``random.*``.
"""

from ndd._invoke import invoke as _invoke
from ndd._op_functions import namespace_functions as _functions
from ndd._rng import RNG, get_default_rng, set_seed

# one function per schema whose public name is random.<name>
_ops = _functions("random")
globals().update(_ops)


# Hand-written: DALI's ``a`` comes first and positionally, before the optional shape_like input,
# and an array ``a`` is taken as its nested list of values.
def choice(a, shape_like=None, /, *, batch_size=None, device=None, p=None, shape=None, rng=None):
    inputs = () if shape_like is None else (shape_like,)
    if hasattr(a, "tolist") and not isinstance(a, (int, float)):
        a = a.tolist()
    return _invoke("random.choice", inputs, {"a": a, "p": p, "shape": shape}, device=device,
                   batch_size=batch_size, rng=rng)


choice.__doc__ = _ops["choice"].__doc__
__all__ = ["RNG", "get_default_rng", "set_seed", *_ops]
