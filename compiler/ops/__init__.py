"""The op catalogue: importing this package declares every op schema.

The import order is the declaration order, which is the order of the generated functions in
``ndd.__all__`` and the namespaces' ``__all__``.
"""
from compiler.ops import arithmetic, geometry, basic, decoders, random  # noqa: F401
from compiler.ops import constant, warp, noise, dims, bbox, color, blur  # noqa: F401
from compiler.ops import shaping, detection, reductions, transforms, reorder  # noqa: F401
from compiler.ops import masking, io, filters, audio, audio_io  # noqa: F401
from compiler.ops import segmentation  # noqa: F401
from compiler.ops import resampling  # noqa: F401
from compiler.ops import aliases  # noqa: F401  (after the ops they alias)
from compiler.ops import fused  # noqa: F401  (fused ops, created by the fuse pass)
