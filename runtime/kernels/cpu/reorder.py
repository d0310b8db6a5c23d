"""CPU kernels of ``sequence_rearrange``, ``permute_batch`` and ``lookup_table`` (numpy).

Semantics follow DALI 2.4 (observed): frames and samples are copied by index (checked
against the sequence length / batch size); ``lookup_table`` builds the table up to the largest
key (the last occurrence of a key wins), maps inputs in ``[0, len(table))`` through it and
everything else to ``default_value``; the float32 values convert to ``dtype`` as ``cast`` does
(round half away from zero, saturate). ``batch_permutation`` draws the whole batch's indices
from the generator of its first seed. Registers ``sequence_rearrange``, ``permute_batch``,
``lookup_table`` and ``batch_permutation``.
"""
from __future__ import annotations

import functools

import numpy as np

from runtime.buffers import batch_array
from runtime.kernels.cpu.cast import cast
from runtime.kernels.registry import per_sample, register, sample_args

from .jit import compiled

__all__ = ["rearrange", "lookup", "batch_permutation"]


def rearrange(x, new_order, i=0):
    """``x[new_order]`` along the first axis (a copy).

    Raises
    ------
    ValueError
        An empty order or an index outside the sequence.
    """
    x = np.asarray(x)
    order = [int(v) for v in np.asarray(new_order).ravel().tolist()]
    if not order:
        raise ValueError("Empty result sequences are not allowed.")
    for k, v in enumerate(order):
        if not 0 <= v < x.shape[0]:
            raise ValueError(f"new_order[{k}] must be between 0 and input_sequence_length = "
                             f"{x.shape[0]} for sample {i}, but it is: {v}.")
    return x[order].copy()


def _table(keys, values, default_value, dtype):
    """``(table, default)``: the table up to the largest key (the last occurrence of a key
    wins) and the default, both converted to ``dtype`` as ``cast`` does."""
    size = max(keys) + 1 if keys else 0
    table = np.full(size, np.float32(default_value), np.float32)
    for k, v in zip(keys, values):
        table[k] = np.float32(v)
    return cast(table, dtype), cast(np.array([np.float32(default_value)]), dtype)[0]


@functools.lru_cache(maxsize=64)
def _domain_table(keys: tuple, values: tuple, default_value, dtype, in_dtype) -> np.ndarray:
    """The output of every bit pattern of a 1- or 2-byte ``in_dtype``, indexed by the pattern
    read as unsigned: one gather maps a whole sample (read-only, cached)."""
    table, default = _table(keys, values, default_value, dtype)
    in_dt = np.dtype(in_dtype)
    patterns = np.arange(1 << (8 * in_dt.itemsize), dtype=np.int64)
    vals = patterns.astype(f"u{in_dt.itemsize}").view(in_dt).astype(np.int64)
    inside = (vals >= 0) & (vals < table.size)
    full = np.full(patterns.size, default, table.dtype)
    full[inside] = table[vals[inside]]
    full.setflags(write=False)
    return full


def _build_gather(njit):
    @njit
    def gather(idx, table, out):
        # out[t] = table[idx[t]] over flat contiguous arrays (idx unsigned, < table.size)
        for t in range(idx.size):
            out[t] = table[idx[t]]
        return out
    return gather


_gather = compiled(_build_gather)


def lookup(x, keys, values, default_value=0.0, dtype="float32", out=None):
    """``table[x]`` where ``0 <= x < len(table)``, else ``default_value``, as ``dtype`` (into
    ``out``, C-contiguous of ``x``'s shape, when given).

    1- and 2-byte inputs take one gather from a table of every input value
    (:func:`_domain_table`); wider ones map the values outside the table to an extra entry
    holding the default."""
    x = np.asarray(x)
    keys = tuple(int(k) for k in keys)
    values = tuple(float(v) for v in values)
    if x.dtype.itemsize <= 2:
        full = _domain_table(keys, values, float(default_value), np.dtype(dtype).name,
                             x.dtype.name)
        idx = np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}")
        out = np.empty(x.shape, full.dtype) if out is None else out
        _gather()(idx.reshape(-1), full, out.reshape(-1))     # numpy's take: ~10x slower
        return out
    table, default = _table(keys, values, default_value, dtype)
    ext = np.append(table, default)
    size = table.size
    if x.dtype.kind == "i":
        idx = np.where((x >= 0) & (x < size), x, size)
    else:
        idx = np.minimum(x, size)
    res = np.take(ext, idx)
    if out is not None:
        out[...] = res
        return out
    return res


@register("sequence_rearrange", "cpu")
@per_sample
def sequence_rearrange_kernel(ctx, ins, a, i):
    """``sequence_rearrange`` of sample ``i``."""
    return rearrange(ins[0], a["new_order"], i)


@register("permute_batch", "cpu")
def permute_batch_kernel(ctx, inputs, args):
    """``permute_batch``: output sample i is input sample ``indices[i]`` (copies)."""
    samples = inputs[0]
    n = len(samples)
    if "indices" in ctx.tensor_arg_names:
        idx = [int(np.asarray(sample_args(ctx, args, i)["indices"]).reshape(())) for i in
               range(n)]
    else:
        idx = [int(v) for v in np.asarray(args["indices"]).ravel().tolist()]
    if len(idx) != n:
        raise ValueError(f"The number of sample indices {len(idx)} does not match the current "
                         f"batch size, which is {n}")
    for k, v in enumerate(idx):
        if not 0 <= v < n:
            raise ValueError(f"Sample index out of range. indices[{k}] = {v} is not a valid "
                             f"index for an input batch of {n} tensors.")
    return [[np.array(samples[v], copy=True) for v in idx]]


@register("lookup_table", "cpu")
def lookup_table_kernel(ctx, inputs, args):
    """``lookup_table``: every sample on the pool, written into one recycled batch buffer
    (:func:`runtime.buffers.batch_array`: warm pages instead of a fresh array per sample)."""
    xs = [np.asarray(x) for x in inputs[0]]
    dt = np.dtype(ctx.out_metas[0].dtype or "float32")
    flat = batch_array((sum(x.size for x in xs),), dt)
    outs, at = [], 0
    for x in xs:
        outs.append(flat[at:at + x.size].reshape(x.shape))
        at += x.size

    def one(i):
        a = sample_args(ctx, args, i)
        lookup(xs[i], a.get("keys") or (), a.get("values") or (), a.get("default_value") or 0.0,
               dt.name, out=outs[i])
    ctx.pool.map(one, len(xs))
    return [outs]


def batch_permutation(n: int, rng: np.random.Generator, allow_repetitions=False,
                      no_fixed_points=False) -> np.ndarray:
    """Random int32 indices ``0 <= out[i] < n`` (DALI ``batch_permutation``).

    Parameters
    ----------
    n : int
        Batch size.
    rng : numpy.random.Generator
    allow_repetitions : bool
        Every index drawn independently and uniformly; else a uniform random permutation.
    no_fixed_points : bool
        ``out[i] != i`` for every ``i`` (ignored when ``n == 1``): independent draws among the
        other ``n - 1`` indices, or a uniform random derangement (rejection sampling, about
        e = 2.72 permutations drawn on average).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int32.
    """
    fixed_ok = not no_fixed_points or n == 1
    if allow_repetitions:
        if fixed_ok:
            return rng.integers(0, n, size=n).astype(np.int32)
        out = rng.integers(0, n - 1, size=n)
        out += out >= np.arange(n)          # skip i itself: uniform over the others
        return out.astype(np.int32)
    ar = np.arange(n)
    while True:
        out = rng.permutation(n)
        if fixed_ok or not (out == ar).any():
            return out.astype(np.int32)


@register("batch_permutation", "cpu")
def batch_permutation_kernel(ctx, inputs, args):
    """``batch_permutation``: one permutation of the batch (int32 scalars)."""
    # the first sample's generator draws for the whole batch: numpy's own default_rng of that
    # seed (sample_rng's stream; its batch-wide state table costs more for one seed)
    idx = batch_permutation(ctx.batch_size, np.random.default_rng(args["_seeds"][0]),
                            bool(args.get("allow_repetitions")),
                            bool(args.get("no_fixed_points")))
    return [[idx[k, ...] for k in range(len(idx))]]     # 0-d views of one array
