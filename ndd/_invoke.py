"""Calling an op: inputs and arguments are checked and converted, a node is recorded, and the
node is executed according to the current ``EvalMode``.

This is the single path every ``ndd.<op>`` function, operator and method goes through.
"""
from __future__ import annotations

import enum
import os
import time
import warnings

import numpy as np

from compiler import schema as S
from compiler.ir import Node, Value
from compiler.types import CPU, DType, parse_device
from ndd._batch import Batch
from ndd._callsite import user_frame
from ndd._capture_state import BatchSizeChangedError, current_capture
from ndd._captured import CapturedBatch
from ndd._construct import as_tensor
from ndd._dtypes import dtype as to_dtype, from_dali, from_numpy
from ndd._errors import CallSite
from ndd._eval_mode import EvalMode
from ndd._evaluate import run_now, wait_pending
from ndd._rng import resolve_rng
from ndd._tensor import Tensor
from ndd.capture._invariant import marked_values, strip_invariants, unwrap_invariant
from ndd.types import DALIDataType, DALIImageType, DALIInterpType
from runtime.async_worker import get_worker
from runtime.device import require_gpu
from runtime.gpu import moves


def canonical(value):
    """Enums, DTypes and numpy/torch dtypes -> canonical plain values for argument conversion."""
    if isinstance(value, DType):
        return value.ir_name
    if isinstance(value, DALIDataType):
        return value.dtype_name
    if isinstance(value, (DALIImageType, DALIInterpType)):
        return value.canonical
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return from_numpy(value)
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return to_dtype(value).ir_name
    ours = from_dali(value)    # DALI-style code passes nvidia.dali.types.FLOAT, GRAY, ...
    return value if ours is None else canonical(ours)


def _input_value(x, op: str, pos: int):
    """(Value, is_tensor) for an op input."""
    if isinstance(x, Batch):
        return x._value
    if isinstance(x, Tensor):
        return tensor_as_batch(x)
    try:
        t = as_tensor(x)
    except TypeError:
        raise TypeError(f"{op}: input {pos} must be an ndd.Batch, ndd.Tensor or array-like, got "
                        f"{type(x).__name__}") from None
    return tensor_as_batch(t)


def tensor_as_batch(t: Tensor) -> Value:
    """A batch-of-1 value holding tensor ``t``."""
    v = t._value
    if v.meta.batch_size == 1 and t._index == 0:
        return v
    arr = t._array()
    return Value(v.meta.with_(batch_size=1), data=[arr])


def _const_from_handle(x):
    arr = np.asarray(x)
    return arr.item() if arr.ndim == 0 else tuple(arr.reshape(-1).tolist())


def _deprecated_arguments(schema: S.OpSchema, kwargs: dict) -> dict:
    """Apply the schema's ``deprecated`` table (DALI's deprecated arguments, which DALI-style
    code still passes): an alias is renamed, an argument DALI no longer uses is dropped, each
    with a DeprecationWarning, as in DALI."""
    table = schema.deprecated
    if not any(k in kwargs for k in table):
        return kwargs
    op = schema.name
    kwargs = dict(kwargs)
    for old, new in table.items():
        if old not in kwargs:
            continue
        value = kwargs.pop(old)
        if new is None:
            warnings.warn(f"{op}: argument '{old}' is no longer used (as in DALI); ignored",
                          DeprecationWarning, stacklevel=4)
            continue
        if kwargs.get(new) is not None:
            raise TypeError(f"{op}: give '{new}' or its deprecated alias '{old}', not both")
        warnings.warn(f"{op}: argument '{old}' is a deprecated alias of '{new}' (as in DALI)",
                      DeprecationWarning, stacklevel=4)
        kwargs[new] = value
    return kwargs


def invoke(op: str, inputs: tuple, kwargs: dict, *, device=None, batch_size=None, rng=None):
    """Record (and, unless deferred, run) one call of ``op``.

    Returns a Batch (or Tensor when every input is a Tensor and no batch_size was given) per
    output; a tuple when the op has several outputs.
    """
    schema = S.get(op)
    user = user_frame(2)    # the user's frame making the call (its file:line names the node)
    # ndd.capture.invariant proxies stand for their values; compile mode keeps which were marked
    if _plain(inputs, kwargs):
        marked = _NO_MARKS
    else:
        inputs, kwargs, marked = strip_invariants(inputs, kwargs)
    if device is not None or batch_size is not None or rng is not None:
        device, batch_size, rng = (unwrap_invariant(device), unwrap_invariant(batch_size),
                                   unwrap_invariant(rng))
    if schema.deprecated:
        kwargs = _deprecated_arguments(schema, kwargs)
    # ---- inputs
    if len(inputs) < schema.min_inputs or (not schema.variadic and len(inputs) > len(schema.inputs)):
        want = (f"{schema.min_inputs}" if schema.min_inputs == len(schema.inputs)
                else f"{schema.min_inputs} to {len(schema.inputs)}")
        if schema.variadic:
            want = f"at least {schema.min_inputs}"
        raise TypeError(f"{op}() takes {want} positional input(s) "
                        f"({', '.join(schema.inputs) or 'none'}), got {len(inputs)}")
    in_values = [x._value if type(x) is Batch else _input_value(x, op, i)
                 for i, x in enumerate(inputs)]
    if marked:
        for i, x in enumerate(inputs):  # a marked array/scalar input: a constant for compile mode
            if f"input {i}" in marked and not isinstance(x, (Batch, Tensor)):
                marked_values.add(in_values[i])
    external = False
    for x in inputs:
        if type(x) is not Batch and _is_external(x):
            external = True
            break
    # ---- arguments
    args: dict = {}
    tensor_args: dict[str, Value] = {}
    for name, value in kwargs.items():
        spec = schema.arg_map.get(name)
        if spec is None or name.startswith("_"):
            valid = ", ".join(a.name for a in schema.args if not a.name.startswith("_"))
            raise TypeError(f"{op}() got an unexpected argument '{name}'; valid arguments: "
                            f"{valid or 'none'}")
        if value is None:
            continue
        if isinstance(value, Batch):
            if not spec.tensor:
                raise TypeError(f"{op}: argument '{name}' cannot be given per sample (a Batch); "
                                f"pass a single value")
            tensor_args[name] = value._value
            continue
        key = _arg_key(spec, value)
        if key is not None:
            converted = _converted.get(key, _MISSING)
            if converted is _MISSING:
                converted = S.convert_arg(op, spec, canonical(value))
                if len(_converted) >= _CONVERTED_MAX:
                    _converted.clear()
                _converted[key] = converted
            args[name] = converted
            continue
        if isinstance(value, Tensor):
            value = _const_from_handle(value)
        elif isinstance(value, np.ndarray) or type(value).__module__ == "torch":
            value = _const_from_handle(value)
        args[name] = S.convert_arg(op, spec, canonical(value))
    for name, default in _defaults(schema):
        if name not in args and name not in tensor_args:
            if default is S.REQUIRED:
                raise TypeError(f"{op}() missing required argument '{name}'")
            args[name] = default
    # ---- batch size
    sizes = {}
    for i, v in enumerate(in_values):
        if isinstance(inputs[i], Batch):
            sizes[_INPUT_LABELS[i] if i < len(_INPUT_LABELS) else f"input {i}"] = \
                v.meta.batch_size
    for k, v in tensor_args.items():
        sizes[f"argument '{k}'"] = v.meta.batch_size
    if batch_size is not None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"{op}: batch_size must be a positive integer, got {batch_size!r}")
        sizes["batch_size"] = int(batch_size)
    cap = current_capture()
    if len(set(sizes.values())) > 1:
        desc = ", ".join(f"{k}: {n}" for k, n in sizes.items())
        if cap is not None and "batch_size" in sizes:   # DALI: a RuntimeError in capture mode
            loop_n = next(n for k, n in sizes.items() if k != "batch_size")
            raise BatchSizeChangedError(
                f"{op}: cannot change batch_size from {loop_n} to {sizes['batch_size']} in a "
                f"compiled (capture-mode) loop: the call cannot change batch size ({desc})")
        raise ValueError(f"{op}: inputs and arguments have different batch sizes ({desc})")
    tensor_mode = not sizes
    if tensor_mode and "batch_only" in schema.traits:     # e.g. batch_permutation (DALI's words)
        raise ValueError(f"`batch_size` must be specified for dynamic `{op}` because it has no "
                         f"data inputs to infer the batch size from.")
    n = next(iter(sizes.values())) if sizes else 1
    if tensor_mode:
        in_values = [v if v.meta.batch_size == 1 else None for v in in_values]
    # ---- device
    if device is not None:
        dev = parse_device(canonical(device))
    elif any(v.meta.device.kind == "gpu" for v in in_values):
        dev = next(v.meta.device for v in in_values if v.meta.device.kind == "gpu")
    else:
        dev = CPU
    if dev.kind == "gpu":
        require_gpu(op)     # without a device: the one clear error, whatever the op declares
    if dev.kind not in schema.devices:
        raise ValueError(f"{op}: not available on device '{dev}'; available: "
                         f"{', '.join(schema.devices)}")
    if cap is not None:
        hit = cap.lookup(op, in_values, args, tensor_args, dev, n, rng, marked)
        if hit is not None:     # compile-mode replay: the result was prepared ahead of time
            outs = cap.wrap(hit, tensor_mode)
            return outs[0] if len(outs) == 1 else tuple(outs)
    # ---- randomness: drawn now, so every mode consumes the RNG the same way
    rng_obj = None
    if schema.is_random:
        rng_obj = resolve_rng(rng)
        args["_seeds"] = rng_obj.draw(n)
    elif rng is not None:
        raise TypeError(f"{op}() got an unexpected argument 'rng' (the op is not random)")
    # ---- metadata and node
    in_metas = [v.meta for v in in_values]
    try:
        out_metas = schema.infer(in_metas, args)
    except S.ArgError:
        raise
    except ValueError as exc:   # the same type (e.g. also an OverflowError), the op named
        try:
            named = type(exc)(f"{op}: {exc}")
        except Exception:  # noqa: BLE001 - a constructor that wants other arguments
            named = ValueError(f"{op}: {exc}")
        raise named from None
    out_metas = [m if m.batch_size == n and m.device == dev else m.with_(batch_size=n, device=dev)
                 for m in out_metas]
    mode = EvalMode.current()
    site = _site_text(user)
    if not external and mode in (EvalMode.eager, EvalMode.deferred):
        site = _with_stack(site, user, mode)    # the stack its error is raised from (ndd/_errors)
    del user
    node = Node(op, in_values, args, tensor_args, out_metas, device=dev, callsite=site)
    if rng_obj is not None:
        node.rng = rng_obj
        node.rng_default = rng is None     # the thread's default generator
    captured = cap is not None and cap.record(node, marked)
    _dispatch(node, mode, external)
    if captured:            # recorded by the trace: a CapturedBatch, as in DALI
        outs = cap.wrap(node.outputs, tensor_mode)
    else:
        outs = [Tensor(v, 0) if tensor_mode else Batch(v) for v in node.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)


_NO_MARKS: frozenset = frozenset()
_SCALAR_TYPES = frozenset({int, float, bool, str, type(None)})
_INPUT_LABELS = tuple(f"input {i}" for i in range(8))


def _plain(inputs: tuple, kwargs: dict) -> bool:
    """Whether a call holds no ``ndd.capture.invariant`` proxy for certain (its inputs ndd
    handles or arrays, its arguments scalars, handles or flat lists of scalars: exact types,
    which no proxy has), so :func:`strip_invariants` has nothing to do."""
    for x in inputs:
        t = type(x)
        if t is not Batch and t is not CapturedBatch and t is not Tensor \
                and t is not np.ndarray:
            return False
    for v in kwargs.values():
        t = type(v)
        if t in _SCALAR_TYPES or t is Batch or t is CapturedBatch or t is Tensor:
            continue
        if t is tuple or t is list:
            for e in v:
                if type(e) not in _SCALAR_TYPES:
                    return False
            continue
        return False
    return True


# Converted arguments, by what conversion reads of the argument's spec (type, choices, length)
# and the value: a call site passes the same constants every iteration. Only exact scalar types
# and short flat lists/tuples of them are keys (the types are part of the key: 1, 1.0 and True
# are equal but may convert differently); conversion is pure, and a failing one is not kept.
_converted: dict = {}
_CONVERTED_MAX = 4096
_MISSING = object()


def _arg_key(spec, value):
    """The cache key of converting ``value`` for ``spec``, or None when not cacheable."""
    t = type(value)
    if t is int or t is str or t is bool or t is float and value != 0.0:
        return (spec.type, spec.choices, spec.length, t, value)
    if (t is tuple or t is list) and len(value) < 16:
        for e in value:
            te = type(e)
            if te is float:
                if e == 0.0:        # -0.0 == 0.0: not told apart by a key
                    return None
            elif te is not int and te is not str and te is not bool:
                return None
        return (spec.type, spec.choices, spec.length, t, tuple(map(type, value)), tuple(value))
    return None


_default_tables: dict = {}


def _defaults(schema) -> tuple:
    """``(name, default)`` of the schema's arguments that have a default or are required
    (``S.REQUIRED``), in declaration order; arguments defaulting to None are left out."""
    table = _default_tables.get(schema.name)
    if table is None or table[0] is not schema:
        table = (schema, tuple((a.name, a.default) for a in schema.args
                               if a.default is not None))
        _default_tables[schema.name] = table
    return table[1]


_basenames: dict = {}


def _site_text(frame) -> str:
    """``"file.py:12"`` of the user's frame (``"<ndd>"`` when there is none)."""
    if frame is None:
        return "<ndd>"
    path = frame.f_code.co_filename
    base = _basenames.get(path)
    if base is None:
        base = _basenames[path] = os.path.basename(path)
    return f"{base}:{frame.f_lineno}"


def _with_stack(text: str, frame, mode) -> CallSite:
    """``text`` as a :class:`ndd._errors.CallSite` with the stack from the user's ``frame``
    to the outermost one (code objects and instruction offsets, no frames kept) and ``mode``."""
    site = CallSite(text)
    frames = []
    while frame is not None:
        frames.append((frame.f_code, frame.f_lasti))
        frame = frame.f_back
    site.stack = tuple(frames)
    site.mode = mode
    return site


def _is_external(x) -> bool:
    """An input given as the user's own array (numpy, torch, anything exposing its buffer)
    rather than an ndd handle or Python values: ndd may use its memory without a copy."""
    if isinstance(x, (Batch, Tensor, np.generic)):    # a numpy scalar is a value
        return False
    return isinstance(x, np.ndarray) or any(hasattr(x, a) for a in (
        "__array_interface__", "__dlpack__", "__cuda_array_interface__"))


# Eager mode hands each op to the eager worker thread, so the caller goes on while it runs. For
# an op whose kernel takes a few microseconds (a view: expand_dims, reinterpret; a colour op on
# a small batch) the hand-off (submit, wake the worker, wake the caller in ``evaluate``) costs
# ten times the work, so such an op runs in the calling thread when nothing is queued before
# it: the same kernel on the same data, in the same order, its error kept on the node for the
# consumer as the worker's is. "Cheap" is measured, per op and call site: the wall time of each
# run, on the worker or in the caller, lowers the estimate to it at once but raises it at most
# twofold, so one run slowed by a busy machine (or by waits for the GIL on the worker) does not
# send the op back to the worker, while an op grown expensive (larger images) gets there after
# a few runs.
INLINE_MAX_S = 150e-6
_cost: dict[tuple, float] = {}      # (op, call site) -> seconds, see above
_queued = None                      # the last future handed to the eager worker


def _timed_run(node: Node) -> None:
    """``run_now(node)``, noting its wall time in ``_cost``."""
    t0 = time.perf_counter()
    try:
        run_now(node)
    finally:
        dt = time.perf_counter() - t0
        key = (node.op, node.callsite)
        before = _cost.get(key)
        _cost[key] = dt if before is None else min(dt, 2.0 * before)


def _cheap_now(node: Node) -> bool:
    """Whether eager ``node`` runs in the calling thread (see ``INLINE_MAX_S``): a CPU op that
    ran in under ``INLINE_MAX_S`` before at this call site, every input computed, the eager
    worker idle (nothing queued runs after it)."""
    cost = _cost.get((node.op, node.callsite))
    if cost is None or cost > INLINE_MAX_S or node.device.kind != "cpu":
        return False
    for v in node.inputs:
        if v.data is None:
            return False
    for v in node.tensor_args.values():
        if v.data is None:
            return False
    queued = _queued
    return queued is None or queued.done()


def _wait_full(node: Node, mode: EvalMode) -> None:
    """``EvalMode.sync_full``: the call also waits for its GPU work (its outputs' ready events),
    as DALI's synchronises its stream after each call."""
    if mode is EvalMode.sync_full:
        for v in node.outputs:
            moves.wait(v.data)


def _dispatch(node: Node, mode: EvalMode, external: bool = False) -> None:
    """Run or schedule ``node`` as ``mode`` says. A call given external arrays runs at once
    in every mode (as DALI 2.4's: the caller may change the array after the call returns),
    so its errors are raised in the call."""
    global _queued
    if external and not node.done:
        run_now(node)
        _wait_full(node, mode)
        return
    if mode is EvalMode.deferred:
        for v in node.all_inputs():
            wait_pending(v)
        return
    if node.done:
        return
    if mode in (EvalMode.sync_cpu, EvalMode.sync_full):
        run_now(node)
        _wait_full(node, mode)
        return
    if _cheap_now(node):
        try:
            _timed_run(node)
        except Exception:   # noqa: BLE001 - kept on node.error: raised where consumed
            pass
        return
    node.future = _queued = get_worker().submit(_timed_run, node)
