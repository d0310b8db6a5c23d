"""Generates the public ``ndd.<op>`` functions from the op schemas (signature + docstring).

``ndd/__init__.py`` and the namespace modules (``ndd.decoders``, ``ndd.random``) take their op
functions from :func:`namespace_functions`, which walks the schema registry: a new schema with a
``public_name`` appears in its namespace (and its ``__all__``) without touching the front end.
"""
from __future__ import annotations

import inspect

from compiler import ops as _catalogue  # noqa: F401  (declares the schemas)
from compiler.schema import REQUIRED, OpSchema, get, public_schemas
from ndd._invoke import invoke

_P = inspect.Parameter


def _default_text(spec) -> str:
    if spec.default is REQUIRED:
        return "required"
    if spec.default is None:
        return "not set"
    return f"default {spec.default!r}"


def make_docstring(schema: OpSchema) -> str:
    lines = [schema.doc, "", "Parameters", "----------"]
    for i, name in enumerate(schema.inputs):
        opt = " (optional)" if i >= schema.min_inputs else ""
        lines.append(f"{name} : Batch | Tensor | array-like{opt}")
    lines.append("batch_size : int, optional\n    Number of samples (random ops without inputs).")
    lines.append("device : 'cpu' | 'gpu', optional\n    Where to run (inferred from the inputs).")
    for a in schema.args:
        if a.name.startswith("_") or a.name in ("spec", "operands"):
            continue
        per = ", per-sample Batch allowed" if a.tensor else ""
        lines.append(f"{a.name} : {a.type}{per}; {_default_text(a)}\n    {a.doc}")
    if schema.is_random:
        lines.append("rng : ndd.random.RNG, optional\n    Generator to draw from (default: the "
                     "thread-local one).")
    lines += ["", "Returns", "-------",
              "Batch (or Tensor when called on Tensors without batch_size)"
              + ("; a tuple for several outputs" if schema.num_outputs > 1 else ""),
              "", "Raises", "------",
              "TypeError / ValueError for invalid arguments (naming the argument and value); "
              "errors of the computation name the op and the call site."]
    return "\n".join(lines)


def make_function(op: str, public_name: str | None = None, module: str = "ndd"):
    """The public function of op ``op``: positional inputs, then keyword-only ``batch_size``,
    ``device``, the schema's arguments and, for random ops, ``rng``."""
    schema = get(op)
    n_in = len(schema.inputs)
    min_in = schema.min_inputs
    is_random = schema.is_random

    variadic = schema.variadic

    def fn(*inputs, batch_size=None, device=None, rng=None, **kwargs):
        if len(inputs) > n_in and not variadic:
            raise TypeError(f"{op}() takes at most {n_in} positional input(s), got {len(inputs)}")
        return invoke(op, inputs, kwargs, device=device, batch_size=batch_size, rng=rng)

    # a variadic op's last input name stands for any number of further inputs (``*inputs``)
    fixed = schema.inputs[:-1] if variadic else schema.inputs
    params = [_P(name, _P.POSITIONAL_ONLY, default=_P.empty if i < min_in else None)
              for i, name in enumerate(fixed)]
    if variadic:
        params.append(_P(schema.inputs[-1], _P.VAR_POSITIONAL))
    params += [_P("batch_size", _P.KEYWORD_ONLY, default=None),
               _P("device", _P.KEYWORD_ONLY, default=None)]
    params += [_P(a.name, _P.KEYWORD_ONLY, default=None) for a in schema.args
               if not a.name.startswith("_")]
    if is_random:
        params.append(_P("rng", _P.KEYWORD_ONLY, default=None))
    fn.__signature__ = inspect.Signature(params)
    name = public_name or op.rsplit(".", 1)[-1]
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = make_docstring(schema)
    return fn


def namespace_functions(namespace: str) -> dict:
    """``{function name: function}`` for every schema whose public name lies in ``ndd``
    (``namespace=""``) or ``ndd.<namespace>``, in declaration order."""
    module = "ndd." + namespace if namespace else "ndd"
    return {s.function_name: make_function(s.name, s.function_name, module)
            for s in public_schemas(namespace)}


def make_reshape(base):
    """``ndd.reshape(data, shape_input=None, /, *, shape=None, rel_shape=None, layout=None)``:
    DALI's positional ``shape_input`` (a Tensor/array: the same shape for every sample; a
    Batch: one per sample) means ``shape=``.

    Hand-written: a second positional input that is really the ``shape`` argument is not
    something a schema declares. ``base`` is the generated ``reshape`` function."""

    def reshape(data, shape_input=None, /, **kwargs):
        if shape_input is not None:
            if kwargs.get("shape") is not None or kwargs.get("rel_shape") is not None:
                raise ValueError("reshape: the output shape is given twice (shape_input and "
                                 "shape=/rel_shape=); give one of them")
            kwargs["shape"] = shape_input
        return base(data, **kwargs)
    params = list(base.__signature__.parameters.values())
    params.insert(1, _P("shape_input", _P.POSITIONAL_ONLY, default=None))
    reshape.__signature__ = inspect.Signature(params)
    reshape.__qualname__ = "reshape"
    reshape.__module__ = "ndd"
    reshape.__doc__ = base.__doc__
    return reshape
