"""torchdata.nodes building blocks over ndd (DALI 2.4's
``nvidia.dali.experimental.dynamic.pytorch.nodes``: ``Reader``, ``DictMapper``, ``ToTorch``).

A graph reads with an ndd reader, maps ndd functions over one key of the dicts it yields and
hands torch tensors to the training loop::

    import torchdata.nodes as tn
    from ndd.pytorch import nodes

    reader = nodes.Reader(ndd.readers.File, batch_size=32, file_root=root, random_shuffle=True)
    images = nodes.DictMapper(reader, lambda enc: ndd.decoders.image(enc), key="data")
    loader = tn.Loader(nodes.ToTorch(images))
    for data, label in loader: ...

Checkpointing (where DALI 2.4's ``Reader.reset(state)`` raises NotImplementedError): every
node's ``state_dict()`` nests its source's, and the reader node's holds the reader's
``get_state()`` string; ``Loader.load_state_dict(loader.state_dict())`` in a new process
rebuilds the reader and continues with the next batch of the saved epoch.
"""
from __future__ import annotations

__all__ = ["Reader", "DictMapper", "ToTorch"]

from collections.abc import Callable, Iterable
from typing import Any

import torch
import torchdata.nodes as tn

from runtime.device import require_gpu

_STATE_KEY = "reader_state"
_SOURCE_KEY = "source"


class Reader(tn.BaseNode):
    """A reader as a node, yielding dicts ``output name -> Batch`` (or ``Tensor``).

    Parameters
    ----------
    reader_type : type
        The reader class (``ndd.readers.File``, ``ndd.readers.Caffe``...); the node builds it
        with ``**kwargs`` (again when a state is restored).
    batch_size : int or None
        ``next_epoch``'s batch size (also ``max_batch_size`` unless given); None: one sample
        per item (Tensors).
    output_names : iterable of str, optional
        The keys of the outputs, in order. Default: ``("data", "label")`` for readers with two
        outputs (DALI's default); a reader whose items are dicts (``readers.TFRecord``) keeps
        its own keys.
    **kwargs
        The reader's arguments.

    Each ``reset()`` starts the reader's next epoch (closing an unfinished one);
    ``reset(state)`` builds a fresh reader, restores the reader state in ``state`` and
    continues that epoch; ``get_state()`` is ``{"reader_state": reader.get_state()}``.

    Raises
    ------
    ValueError
        (at the first item) ``output_names`` of another length than the reader's outputs, or
        none given for a reader without two outputs (DALI's message).
    """

    def __init__(self, reader_type: type, *, batch_size: int | None,
                 output_names: Iterable[str] | None = None, **kwargs: Any):
        super().__init__()
        if batch_size is not None and "max_batch_size" not in kwargs:
            kwargs["max_batch_size"] = batch_size
        self._reader_type = reader_type
        self._kwargs = kwargs
        self._reader = reader_type(**kwargs)
        self._batch_size = batch_size
        self._epoch = None
        self._output_names = None if output_names is None else tuple(output_names)
        known = getattr(self._reader, "output_names", None)
        if known is not None:
            self._check_names(len(known))

    @property
    def reader(self):
        """The ndd reader the node reads with (rebuilt by ``reset(state)``)."""
        return self._reader

    def _check_names(self, count):
        if self._output_names is None:
            if count != 2:
                raise ValueError(f"Cannot infer output names for reader "
                                 f"{self._reader_type.__qualname__} ({count} outputs); give "
                                 f"output_names")
            self._output_names = ("data", "label")
        elif len(self._output_names) != count:
            raise ValueError(f"Number of output names does not match number of outputs: "
                             f"{len(self._output_names)} names {self._output_names} for "
                             f"{count} outputs of {self._reader_type.__qualname__}")

    def _close_epoch(self):
        if self._epoch is not None:
            self._epoch.close()
            self._epoch = None

    def next(self):
        if self._epoch is None:
            raise RuntimeError("Reader.next() called before reset(). Call reset() first.")
        outputs = next(self._epoch)
        if isinstance(outputs, dict):
            return dict(outputs)
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        if self._output_names is None or len(self._output_names) != len(outputs):
            self._check_names(len(outputs))
        return dict(zip(self._output_names, outputs))

    def reset(self, initial_state: dict | None = None):
        """Start the next epoch, or (``initial_state``) continue a saved one."""
        super().reset(initial_state)
        self._close_epoch()
        if initial_state is not None:
            if not isinstance(initial_state, dict) or _STATE_KEY not in initial_state:
                raise ValueError(f"ndd.pytorch.nodes.Reader: the state must be a dict with "
                                 f"{_STATE_KEY!r} (a Reader node's state_dict()), got "
                                 f"{initial_state!r:.200}")
            self._reader.close()
            self._reader = self._reader_type(**self._kwargs)
            self._reader.set_state(initial_state[_STATE_KEY])
        self._epoch = self._reader.next_epoch(batch_size=self._batch_size)

    def get_state(self) -> dict:
        """``{"reader_state": <the reader's get_state() string>}``: where the next item comes
        from."""
        return {_STATE_KEY: self._reader.get_state()}

    def get_metadata(self) -> dict:
        """The reader's ``get_metadata`` (DALI's ReaderMeta keys)."""
        return self._reader.get_metadata(self._batch_size)


class DictMapper(tn.BaseNode):
    """Applies ``map_fn`` (any ndd function of a Batch or Tensor) to one key of the dicts of
    ``source``.

    Parameters
    ----------
    source : torchdata.nodes.BaseNode
        Yields dicts of Tensors or Batches.
    map_fn : callable
        Takes the value under ``key`` and returns a Tensor or Batch (or anything ``ToTorch``
        takes).
    key : str, default "data"
    """

    def __init__(self, source: tn.BaseNode, map_fn: Callable, key: str = "data"):
        super().__init__()
        self._source = source
        self._map_fn = map_fn
        self._key = key

    def next(self) -> dict:
        data = dict(next(self._source))
        if self._key not in data:
            raise KeyError(f"DictMapper: key {self._key!r} is not among the source's outputs "
                           f"{list(data)}")
        data[self._key] = self._map_fn(data[self._key])
        return data

    def reset(self, initial_state: dict | None = None):
        super().reset(initial_state)
        self._source.reset(None if initial_state is None else initial_state[_SOURCE_KEY])

    def get_state(self) -> dict:
        return {_SOURCE_KEY: self._source.state_dict()}


class ToTorch(tn.BaseNode):
    """Converts the dicts of ``source`` to tuples of ``torch.Tensor`` (``.torch()`` of each
    value, in the dict's order).

    Parameters
    ----------
    source : torchdata.nodes.BaseNode
        Yields dicts of Tensors or Batches.
    output_stream : torch.cuda.Stream or stream-like, optional
        The CUDA stream the tensors are used on (DALI's argument); needs a GPU.

    When some values lie on a GPU, the CPU ones are copied to that GPU first (as DALI); values
    on different GPUs raise ValueError.

    Raises
    ------
    RuntimeError
        ``output_stream`` given on a machine without a CUDA device.
    """

    def __init__(self, source: tn.BaseNode, output_stream: Any | None = None):
        super().__init__()
        self._source = source
        self._stream = output_stream
        if output_stream is not None:
            require_gpu("ndd.pytorch.nodes.ToTorch(output_stream=...)")

    def next(self) -> tuple:
        data = dict(next(self._source))
        gpu_index = None
        for key, value in data.items():
            dev = value.device
            if dev.device_type == "cpu":
                continue
            if gpu_index is None:
                gpu_index = dev.device_id
            elif gpu_index != dev.device_id:
                raise ValueError(f"ToTorch: all GPU tensors/batches must be on the same device; "
                                 f"{key!r} is on GPU {dev.device_id}, another on {gpu_index}")
        if gpu_index is not None:
            data = {k: v.gpu(gpu_index) if v.device.device_type == "cpu" else v
                    for k, v in data.items()}
            stream = self._stream
            if stream is not None and not isinstance(stream, torch.cuda.Stream):
                stream = torch.cuda.ExternalStream(int(getattr(stream, "handle", stream)))
            with torch.cuda.stream(stream):     # no-op context for None
                return tuple(v.torch() for v in data.values())
        return tuple(v.torch() for v in data.values())

    def reset(self, initial_state: dict | None = None):
        super().reset(initial_state)
        self._source.reset(None if initial_state is None else initial_state[_SOURCE_KEY])

    def get_state(self) -> dict:
        return {_SOURCE_KEY: self._source.state_dict()}
