"""Affine transform matrices: ``transforms.translation`` / ``scale`` / ``rotation`` / ``shear`` /
``crop`` / ``combine``.

Source: DALI 2.4 ``transforms.*`` (argument names, defaults, output type and shape observed by
running DALI's CPU operators): each output sample is a float32 ``ndim x (ndim + 1)`` matrix
(layout ``**``); with an input matrix the new transform is applied after it
(``reverse_order=True``: before it).
"""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def _infer_for(check):
    def infer(metas, args):
        check(args)
        if not metas:
            return [ValueMeta(dtype="float32", ndim=2, layout="**")]
        m = metas[0]
        if m.dtype is not None and m.dtype != "float32":
            raise ValueError(f"Unexpected input data type. Expected float, got: {m.dtype} (the "
                             f"input must be a float32 ndim x (ndim + 1) affine matrix)")
        if m.ndim is not None and m.ndim != 2:
            raise ValueError(f"The input, if provided, is expected to be a 2D tensor with "
                             f"dimensions (ndim, ndim+1) representing an affine transform; got "
                             f"{m.ndim}-D samples")
        return [m.with_(dtype="float32", ndim=2, layout="**")]
    return infer


def _no_check(args):
    return None


def _shear_check(args):
    if (args.get("shear") is None) == (args.get("angles") is None):
        raise ValueError("One and only one of the following arguments is expected: ``shear`` "
                         "or ``angles``")


_REVERSE = ArgSpec("reverse_order", "bool", False,
                   doc="Apply this transform before the input transform instead of after it.")
_CENTER = ArgSpec("center", "float[]", None, tensor=True,
                  doc="Center of the operation (one value per dimension).")

_SPECS = {
    "translation": ((ArgSpec("offset", "float[]", REQUIRED, tensor=True,
                             doc="The translation vector (its length is the dimensionality)."),
                     _REVERSE), _no_check, "A translation matrix"),
    "scale": ((_CENTER, ArgSpec("ndim", "int", None,
                                doc="Number of dimensions, where ``scale`` is a scalar and there "
                                    "is no input."),
               _REVERSE, ArgSpec("scale", "float[]", REQUIRED, tensor=True,
                                 doc="Scale factor per dimension.")), _no_check,
              "A scaling matrix"),
    "rotation": ((ArgSpec("angle", "float", REQUIRED, tensor=True, doc="Angle, in degrees."),
                  ArgSpec("axis", "float[]", None, tensor=True,
                          doc="Rotation axis (3-D transforms; need not be normalized)."),
                  _CENTER, _REVERSE), _no_check,
                 "A rotation matrix (2-D, or 3-D about ``axis``)"),
    "shear": ((ArgSpec("angles", "float[]", None, tensor=True,
                       doc="Shear angles in degrees (2: x, y; 6 for 3-D); factor = tan(angle)."),
               _CENTER, _REVERSE,
               ArgSpec("shear", "float[]", None, tensor=True,
                       doc="Shear factors (2: x, y; 6: xy, xz, yx, yz, zx, zy).")),
              _shear_check, "A shear matrix"),
    "crop": ((ArgSpec("absolute", "bool", False,
                      doc="Swap start and end coordinates where start > end."),
              ArgSpec("from_end", "float[]", (1.0,), tensor=True,
                      doc="Upper bound of the source space (one value repeats)."),
              ArgSpec("from_start", "float[]", (0.0,), tensor=True,
                      doc="Lower bound of the source space (one value repeats)."),
              _REVERSE,
              ArgSpec("to_end", "float[]", (1.0,), tensor=True,
                      doc="Upper bound of the destination space (one value repeats)."),
              ArgSpec("to_start", "float[]", (0.0,), tensor=True,
                      doc="Lower bound of the destination space (one value repeats).")),
             _no_check, "A matrix mapping [from_start, from_end] onto [to_start, to_end]"),
}


for _name, (_args, _check, _what) in _SPECS.items():
    register(OpSchema(
        f"transforms.{_name}", ("input",), _args, _infer_for(_check), min_inputs=0,
        public_name=f"transforms.{_name}",
        doc=f"{_what}: a float32 ndim x (ndim + 1) affine matrix, applied after the optional "
            f"input transform. Source: DALI ``transforms.{_name}``."))


def _combine_infer(metas, args):
    for i, m in enumerate(metas):
        if m.dtype is not None and m.dtype != "float32":
            raise ValueError(f"transforms.combine: input {i} must be a float32 affine matrix, "
                             f"got {m.dtype}")
    return [metas[0].with_(dtype="float32", ndim=2, layout="**")]


register(OpSchema(
    "transforms.combine", ("input_0", "input_1", "inputs"), (_REVERSE,), _combine_infer,
    variadic=True, min_inputs=2, public_name="transforms.combine",
    doc="Combines affine matrices: the result applies them in the order given (``T3(T2(T1(x)))``"
        "; ``reverse_order=True``: ``T1(T2(T3(x)))``). Source: DALI ``transforms.combine``."))


# ---------------------------------------------------------------- coord_transform
COORD_INPUTS = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "uint64",
                "float32")


def _coord_transform_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in COORD_INPUTS:
        raise ValueError(f"coord_transform: unsupported input type: {m.dtype} (expected one of "
                         f"{', '.join(COORD_INPUTS)})")
    if m.ndim is not None and m.ndim < 2:
        raise ValueError(f"CoordTransform expects an input with at least 2 dimensions (points "
                         f"along the last one); got {m.ndim}-D samples")
    if args.get("MT") is not None and (args.get("M") is not None or args.get("T") is not None):
        raise ValueError("The combined ``MT`` argument cannot be used together with separate "
                         "``M``, ``T`` arguments.")
    dtype = args.get("dtype") or "float32"
    if m.dtype is not None and dtype not in (m.dtype, "float32"):
        raise ValueError(f"CoordTransform output type must be the same as input type, which is "
                         f"{m.dtype}, or `float`. Got: {dtype}")
    return [m.with_(dtype=dtype)]


register(OpSchema(
    "coord_transform", ("input",), (
        ArgSpec("M", "float[]", None, tensor=True,
                doc="The m x n matrix (row-major values; a scalar: that value on the diagonal of "
                    "an n x n matrix; default identity)."),
        ArgSpec("MT", "float[]", None, tensor=True,
                doc="The block matrix [M T], m x (n + 1) (exclusive with ``M`` and ``T``)."),
        ArgSpec("T", "float[]", None, tensor=True,
                doc="The translation, m values (a scalar repeats)."),
        ArgSpec("dtype", "dtype", None,
                doc="Output type: float32 (default) or the input type (rounded, clamped)."),
    ), _coord_transform_infer, public_name="coord_transform",
    doc="``out = M * in + T`` for the n-component vectors along the last axis of each sample "
        "(m components out). Source: DALI ``coord_transform``."))
