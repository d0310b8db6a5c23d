"""PyTorch integration of ndd (DALI 2.4's ``nvidia.dali.experimental.dynamic.pytorch``).

``ndd.pytorch.nodes``: torchdata.nodes building blocks (a reader node, a mapping node, a
conversion to torch), there when ``torchdata`` is installed. Unlike DALI's, this package is
not imported by ``import ndd`` (importing torch and torchdata takes seconds): import it as
``import ndd.pytorch.nodes`` or ``from ndd.pytorch import nodes``.
"""
import importlib.util as _util

__all__ = []
if _util.find_spec("torchdata") is not None:
    __all__ = ["nodes"]
    from ndd.pytorch import nodes as nodes  # noqa: F401
