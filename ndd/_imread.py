"""``ndd.imread``: read image files and decode them (DALI dynamic mode's ``imread``)."""
from __future__ import annotations

import os

import numpy as np

from ndd._batch import Batch
from ndd._construct import encoded_batch
from ndd._tensor import Tensor
from ndd.decoders import image
from runtime.readers.file_io import read_file as _read_file


def imread(filepaths, /, *, device="cpu", **kwargs):
    """Read and decode an image file, or a list of them.

    Parameters
    ----------
    filepaths : str | os.PathLike | list of them | ndd.Tensor | ndd.Batch
        One path (gives a Tensor), a list of paths (gives a Batch), or paths stored as
        encoded bytes (uint8) in a Tensor / the samples of a Batch.
    device : "cpu"
        Where to decode (only the CPU here).
    **kwargs
        Arguments of :func:`ndd.decoders.image` (``output_type``, ``dtype``,
        ``adjust_orientation``, DALI's tuning knobs).

    Returns
    -------
    ndd.Tensor or ndd.Batch
        HWC uint8 image(s), as ``ndd.decoders.image``.

    Raises
    ------
    TypeError
        ``filepaths`` of another kind.
    RuntimeError
        A file that cannot be read (naming the path); decoding errors as ``decoders.image``.

    Source: DALI ``experimental.dynamic.imread``.
    """
    single = isinstance(filepaths, (str, os.PathLike, Tensor))
    if isinstance(filepaths, Tensor):
        paths = [_path_of(np.asarray(filepaths))]
    elif isinstance(filepaths, Batch):
        paths = [_path_of(np.asarray(t)) for t in filepaths.tensors]
    elif single:
        paths = [os.fspath(filepaths)]
    elif isinstance(filepaths, (list, tuple)) and filepaths and \
            all(isinstance(p, (str, os.PathLike)) for p in filepaths):
        paths = [os.fspath(p) for p in filepaths]
    else:
        raise TypeError(f"imread: filepaths must be a path, a non-empty list of paths, or a "
                        f"Tensor/Batch of encoded paths; got {type(filepaths).__name__}")
    files = encoded_batch([_read_file(p) for p in paths], paths)
    out = image(files, device=device, **kwargs)
    return out.tensors[0] if single else out


def _path_of(arr: np.ndarray) -> str:
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise TypeError(f"imread: a Tensor/Batch of paths must hold encoded bytes (1-D uint8), "
                        f"got {arr.dtype} with {arr.ndim} dimensions")
    return arr.tobytes().decode()
