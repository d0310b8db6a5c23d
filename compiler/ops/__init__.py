"""The op catalogue: importing this package declares every op schema."""
from compiler.ops import arithmetic, basic, decoders, geometry, random  # noqa: F401
from compiler.ops import fused  # noqa: F401  (fused ops, created by the fuse pass)
