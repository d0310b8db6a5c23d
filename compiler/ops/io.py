"""File input ops: ``io.file.read``.

Source: DALI 2.4 ``io.file.read`` (argument names and defaults; behaviour observed by running
its CPU operator).
"""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import ArgSpec, OpSchema, register


def _read_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in ("uint8", "int8"):
        raise TypeError(f"file paths must be 1-D uint8 (or int8) samples of encoded path "
                        f"bytes, got {m.dtype}")
    if m.ndim is not None and m.ndim != 1:
        raise ValueError(f"file paths must be 1-D samples (the path's bytes, e.g. "
                         f"np.frombuffer(path.encode(), np.uint8)), got {m.ndim}-D samples")
    return [ValueMeta(dtype="uint8", ndim=1, layout="")]


register(OpSchema(
    "io.file.read", ("filepaths",), (
        ArgSpec("dont_use_mmap", "bool", False, doc="Ignored (ndd reads with read(2))."),
        ArgSpec("use_o_direct", "bool", False, doc="Ignored (ndd reads through the page "
                                                   "cache)."),
    ), _read_infer, public_name="io.file.read",
    doc="Reads the whole file named by each sample (the path's bytes as a 1-D uint8 tensor, "
        "up to the first NUL; relative to the working directory) into a 1-D uint8 tensor. "
        "Raises RuntimeError naming the sample and path when a file cannot be read. Source: "
        "DALI ``io.file.read``."))


def _dump_infer(metas, args):
    m = metas[0]
    if (args.get("input_layout") or "HWC") != "HWC":
        raise ValueError("CHW not supported yet.")
    if m.ndim is not None and m.ndim != 3:
        raise ValueError(f"Input images must have three dimensions, got input with `{m.ndim}` "
                         f"dimensions.")
    if m.dtype is not None and m.dtype != "uint8":
        raise TypeError(f"dump_image writes uint8 images, got {m.dtype}")
    return [m]


register(OpSchema(
    "dump_image", ("input",), (
        ArgSpec("input_layout", "layout", "HWC", doc="Layout of the images (only HWC)."),
        ArgSpec("suffix", "str", "", doc="Middle part of the file names."),
    ), _dump_infer, traits=frozenset({"has_side_effects"}), public_name="dump_image",
    doc="Writes every image (HWC uint8, 1 or 3 channels) to ``<sample>-<suffix>-0.ppm`` in "
        "the working directory as an ASCII PGM (P2) / PPM (P3) file, and passes the batch "
        "through; for debugging. Source: DALI ``dump_image``."))
