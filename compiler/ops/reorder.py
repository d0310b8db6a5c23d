"""Reordering and table ops: ``sequence_rearrange``, ``permute_batch``, ``lookup_table`` and
``batch_permutation``.

Source: DALI 2.4 ``sequence_rearrange`` / ``permute_batch`` / ``lookup_table`` (argument names,
defaults, types and error rules observed by running DALI's CPU operators).
"""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register

LUT_INPUTS = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")
MAX_KEY = 65535


def _sequence_rearrange_infer(metas, args):
    m = metas[0]
    layout = m.layout or ""
    if layout and layout[0] != "F":
        raise ValueError(f"Expected sequence as the input, where outermost dimension represents "
                         f"frames dimension `F`, got data with layout = \"{layout}\".")
    if m.ndim is not None and m.ndim < 2:
        raise ValueError(f"Sequence elements must have at least 1 dim (got {m.ndim}-D samples; "
                         f"the first dimension is the frames)")
    order = args.get("new_order")
    if order is not None and not isinstance(order, int) and len(order) == 0:
        raise ValueError("Empty result sequences are not allowed (argument 'new_order' is "
                         "empty).")
    return [m]


register(OpSchema(
    "sequence_rearrange", ("input",), (
        ArgSpec("new_order", "int[]", REQUIRED, tensor=True,
                doc="Output frame i is input frame new_order[i] (repeats and omissions "
                    "allowed; per sample as a Batch)."),
    ), _sequence_rearrange_infer, public_name="sequence_rearrange",
    doc="Rearranges the frames (outermost dimension) of each sequence. Source: DALI "
        "``sequence_rearrange``."))


register(OpSchema(
    "permute_batch", ("input",), (
        ArgSpec("indices", "int[]", REQUIRED, tensor=True,
                doc="Output sample i is input sample indices[i]: one index per sample (a list, "
                    "or a Batch of scalars)."),
    ), lambda metas, args: [metas[0]], public_name="permute_batch",
    doc="A batch of the input's samples picked by ``indices`` (repeats and omissions allowed). "
        "Source: DALI ``permute_batch``."))


def _lookup_table_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in LUT_INPUTS:
        raise ValueError(f"Unsupported input type: {m.dtype} (lookup_table takes integer "
                         f"inputs)")
    keys, values = list(args.get("keys") or ()), list(args.get("values") or ())
    if len(keys) != len(values):
        raise ValueError(f"`keys` size should match `values` size ({len(keys)} keys, "
                         f"{len(values)} values)")
    if keys and (min(keys) < 0 or max(keys) > MAX_KEY):
        raise ValueError(f"`keys` should be in the range [0, {MAX_KEY}] (got {min(keys)} .. "
                         f"{max(keys)})")
    return [m.with_(dtype=args.get("dtype") or "float32")]


register(OpSchema(
    "lookup_table", ("input",), (
        ArgSpec("default_value", "float", 0.0, doc="Output for values that are not keys."),
        ArgSpec("dtype", "dtype", None, doc="Output type (default float32; values convert "
                                            "with rounding and saturation)."),
        ArgSpec("keys", "int[]", (), doc="Input values of the table, in [0, 65535] (the last "
                                         "occurrence of a key counts)."),
        ArgSpec("values", "float[]", (), doc="Output value of each key."),
    ), _lookup_table_infer, public_name="lookup_table", deprecated={"output_dtype": "dtype"},
    doc="Maps integer inputs through a table of ``keys`` -> ``values`` (``default_value`` "
        "elsewhere). Source: DALI ``lookup_table``."))


register(OpSchema(
    "batch_permutation", (), (
        ArgSpec("allow_repetitions", "bool", False,
                doc="Draw every index independently (repetitions and omissions possible)."),
        ArgSpec("no_fixed_points", "bool", False,
                doc="No ``out[i] == i`` (ignored for a batch of 1)."),
        ArgSpec("_seeds", "any", None),
    ), lambda metas, args: [ValueMeta(dtype="int32", ndim=0, layout="")],
    traits=frozenset({"random", "batch_only"}), public_name="batch_permutation",
    doc="A batch of ``batch_size`` random int32 scalars indexing the batch's samples (a "
        "permutation unless ``allow_repetitions``), e.g. for ``permute_batch``. Source: DALI "
        "``batch_permutation``."))
