"""``ndd.tensor`` / ``as_tensor`` / ``batch`` / ``as_batch``: handles from user data; batches
of encoded files (readers, ``ndd.imread``).

The conversions themselves are the constructors' (:class:`ndd.Tensor`, :class:`ndd.Batch`);
these functions pick copy or view, as DALI 2.4's do.
"""
from __future__ import annotations

from compiler.ir import Value, ValueMeta
from ndd._arrays import stack_samples
from ndd._batch import Batch
from ndd._callsite import callsite
from ndd._device_move import stacked_value
from ndd._errors import call_site, raise_stored
from ndd._eval_mode import EvalMode
from ndd._tensor import Tensor
from runtime.storage import SampleList

#: The metadata of one encoded file: its bytes as a 1-D uint8 array.
ENCODED = ValueMeta(dtype="uint8", ndim=1, layout="")


def encoded_batch(encoded: list, files: list) -> Batch:
    """A Batch of encoded files (1-D uint8 samples) that knows each sample's file name (for
    decoders' error messages)."""
    return Batch(Value(ENCODED.with_(batch_size=len(encoded)), data=SampleList(encoded, files)))


def tensor(data, dtype=None, device=None, layout=None, pad: bool = False) -> Tensor:
    """Create a Tensor holding a copy of ``data``.

    Parameters
    ----------
    data : array-like (numpy array, torch tensor, ndd.Tensor, scalar, nested list) | ndd.Batch
    dtype : ndd.DType | str | numpy/torch dtype, optional
        Convert to this type (float -> int rounds half away from zero and saturates, as DALI).
    device : "cpu" | "gpu" | "gpu:N", optional
    layout : str, optional
        One letter per dimension (e.g. ``"HWC"``).
    pad : bool
        For a Batch: zero-pad ragged samples to a common shape (else ValueError).

    A ``Batch`` is stacked into one tensor with a leading sample dimension (layout ``"N" +
    layout``), as in DALI.

    Raises
    ------
    ValueError, TypeError, RuntimeError
        As :class:`ndd.Tensor`.
    """
    if isinstance(data, Batch):
        return _batch_as_tensor(data, dtype, device, layout, pad, copy=True, what="ndd.tensor")
    return Tensor(data, dtype=dtype, device=device, layout=layout, copy=True)


def as_tensor(data, dtype=None, device=None, layout=None, pad: bool = False) -> Tensor:
    """Wrap ``data`` as a Tensor without copying when possible (``data`` itself for a Tensor
    asked for no conversion).

    A ``Batch`` is stacked into one tensor with a leading sample dimension (layout ``"N" +
    layout``); ragged batches need ``pad=True`` (zero padding), else ValueError.
    """
    if isinstance(data, Batch):
        return _batch_as_tensor(data, dtype, device, layout, pad, copy=False,
                                what="ndd.as_tensor")
    if isinstance(data, Tensor) and dtype is None and layout is None and device is None:
        return data
    return Tensor(data, dtype=dtype, device=device, layout=layout)


def _batch_as_tensor(data, dtype, device, layout, pad, copy, what) -> Tensor:
    """A Batch stacked into one tensor with a leading sample dimension (layout "N" + the
    batch's, unless ``layout`` is given).

    The stacking runs at once in every mode. Its error (a ragged batch without ``pad``) is
    raised in the call; under ``EvalMode.eager`` / ``deferred`` in the form of a deferred op's
    error (``ndd/_errors.py``): a new exception of the same type and message, whose cause's
    traceback ends at the user's call, as DALI 2.4 raises it from its lazy ``as_tensor``.
    """
    samples = data._samples()
    lay = ("N" + data.layout) if data.layout else ""
    if data.device.kind == "gpu":           # stacked on the GPU (ndd/_device_move.py)
        stacked = Tensor(stacked_value(samples, pad, lay, f"{what}(batch)"), 0)
        return Tensor(stacked, dtype=dtype, device=device, layout=layout, copy=copy)
    try:
        arr = stack_samples(samples, pad=pad, what=f"{what}(batch)")
    except ValueError as err:
        mode = EvalMode.current()
        if mode not in (EvalMode.eager, EvalMode.deferred):
            raise
        err._ndd_site = call_site(callsite(), 1, mode)
        raise_stored(err)
    return Tensor(arr, dtype=dtype, device=device, layout=layout if layout is not None else lay,
                  copy=copy)


def batch(data, dtype=None, device=None, layout=None) -> Batch:
    """Create a Batch holding copies of the samples in ``data``.

    Parameters
    ----------
    data : list of array-likes / Tensors | Batch | array-like with a leading sample dimension
    dtype, device, layout : as in :func:`tensor` (layout describes one sample); ``dtype`` is
        required for an empty list

    Raises
    ------
    ValueError / TypeError / RuntimeError
        As :class:`ndd.Batch`.
    """
    return Batch(data, dtype=dtype, device=device, layout=layout, copy=True)


def as_batch(data, dtype=None, device=None, layout=None) -> Batch:
    """Wrap ``data`` as a Batch without copying when possible (``data`` itself for a Batch
    asked for no conversion; see :func:`batch`)."""
    if isinstance(data, Batch) and dtype is None and layout is None and device is None:
        return data
    return Batch(data, dtype=dtype, device=device, layout=layout)
