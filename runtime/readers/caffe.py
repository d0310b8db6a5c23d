"""Caffe and Caffe2 LMDB records: their parsing and the runtime cores of
``ndd.readers.Caffe`` / ``ndd.readers.Caffe2`` (DALI's ``fn.readers.caffe`` /
``fn.readers.caffe2``, CPU).

A sample is one LMDB record (``runtime/readers/lmdb_store.py``: databases in the order of
``path``, records in key order). Its value is a protobuf message
(``runtime/readers/caffe_proto.py``):

* Caffe: a ``Datum``. Outputs (DALI 2.4, measured): the image when ``image_available`` --
  the ``data`` bytes as uint8 1-D when the image is encoded (``encoded`` true or absent),
  else raw pixels reshaped to ``(height, width, channels)`` -- and the label when
  ``label_available``: int32, shape (1,). A record without ``data`` (``label``) gives an empty
  image (label) of shape (0,), as DALI's.
* Caffe2: a ``TensorProtos`` whose tensors are, in order: the image (when
  ``image_available``; ``STRING``: encoded bytes, uint8 1-D; ``BYTE``: raw pixels of shape
  ``dims`` (H, W[, C]) as (H, W, C or 1)), the label tensor(s) of ``label_type``, then
  ``additional_inputs`` tensors (FLOAT, INT32 or INT64, 1-D), then the bounding box when
  ``bbox`` (INT32, 4 values). Label outputs by ``label_type``:

  ==  ============================  ===============================================
  0   SINGLE_LABEL                  the label, shape (1,), int32 or float32 as stored
  1   MULTI_LABEL_SPARSE            multi-hot (num_labels,), and the stored indices
  2   MULTI_LABEL_DENSE             the stored vector, (n,)
  3   MULTI_LABEL_WEIGHTED_SPARSE   float32 (num_labels,) weights at the indices (a
                                    second tensor holds the weights), and the indices
  4   NO_LABEL                      none
  ==  ============================  ===============================================

  DALI 2.4 declares two label outputs for label types 1 and 3 but fills one and then fails
  (or crashes); ndd's second output, the stored indices, is its own (docs/semantics.md).

Every failure names the database and the key of the record.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from google.protobuf.message import DecodeError

from runtime.readers import caffe_proto as pb
from runtime.readers.caffe_wire import common_batch, datum_parts, tensor_protos_parts
from runtime.readers.file_index import FileIndex
from runtime.readers.file_io import path_list
from runtime.readers.file_reader import FileReaderCore
from runtime.readers.lmdb_store import LMDBStore

__all__ = ["LABEL_TYPES", "parse_datum", "parse_tensor_protos", "CaffeReaderCore",
           "Caffe2ReaderCore", "CAFFE_STATE_FORMAT", "CAFFE2_STATE_FORMAT"]

CAFFE_STATE_FORMAT = "ndd.readers.Caffe/1"
CAFFE2_STATE_FORMAT = "ndd.readers.Caffe2/1"
#: Caffe2's label types (DALI's ``label_type`` values)
LABEL_TYPES = {0: "SINGLE_LABEL", 1: "MULTI_LABEL_SPARSE", 2: "MULTI_LABEL_DENSE",
               3: "MULTI_LABEL_WEIGHTED_SPARSE", 4: "NO_LABEL"}
#: tensors a Caffe2 record holds for its label, by label type
_LABEL_TENSORS = {0: 1, 1: 1, 2: 1, 3: 2, 4: 0}
#: outputs of the label, by label type
LABEL_OUTPUTS = {0: 1, 1: 2, 2: 1, 3: 2, 4: 0}
_EMPTY_U8 = np.zeros(0, np.uint8)
_EMPTY_I32 = np.zeros(0, np.int32)


def _raw_image(data: bytes, shape, where: str):
    need = math.prod(shape)
    if min(shape) < 0 or len(data) != need:
        raise ValueError(f"{where}: the raw image holds {len(data)} bytes, its shape "
                         f"{tuple(shape)} needs {need}")
    return np.frombuffer(data, np.uint8).reshape(shape).copy()


def parse_datum(raw: bytes, where: str, image_available=True, label_available=True):
    """The outputs of one Caffe record: ``[image][, label]`` (see the module docstring).

    Raises
    ------
    ValueError
        Not a ``Datum`` (DALI's words: "Error while parsing Caffe file: ..."), or raw pixels
        that do not fill ``height x width x channels``, naming ``where``.
    """
    if image_available and label_available:
        parts = datum_parts(raw)    # the common record, read from its bytes (caffe_wire.py)
        if parts is not None:
            start, end, label = parts
            return [np.frombuffer(raw, np.uint8, end - start, start).copy(),
                    np.array([label], np.int32)]
    try:
        datum = pb.Datum.FromString(raw)
    except DecodeError:
        raise ValueError(f"Error while parsing Caffe file: {where} (raw data length: "
                         f"{len(raw)} bytes): not a caffe.Datum protobuf message") from None
    out = []
    if image_available:
        if not datum.HasField("data"):
            out.append(_EMPTY_U8)
        elif datum.HasField("encoded") and not datum.encoded:
            out.append(_raw_image(datum.data, (datum.height, datum.width, datum.channels),
                                  where))
        else:
            out.append(np.frombuffer(datum.data, np.uint8).copy())
    if label_available:
        out.append(np.array([datum.label], np.int32) if datum.HasField("label")
                   else _EMPTY_I32)
    return out


def _values(t, where: str, what: str, allowed=("FLOAT", "INT32", "INT64")):
    """The numbers of tensor ``t`` as a 1-D array of its stored type."""
    kind = pb.DATA_TYPES.get(t.data_type, str(t.data_type))
    if kind not in allowed:
        raise ValueError(f"{where}: the {what} tensor has data_type {kind}; expected "
                         f"{' or '.join(allowed)}")
    # np.fromiter: ~7x faster than np.array on protobuf's repeated containers
    if kind == "FLOAT":
        return np.fromiter(t.float_data, np.float32, len(t.float_data))
    if kind == "INT32":
        return np.fromiter(t.int32_data, np.int32, len(t.int32_data))
    return np.fromiter(t.int64_data, np.int64, len(t.int64_data))


def _sparse(indices, num_labels, dtype, where):
    idx = indices.astype(np.int64)
    bad = (idx < 0) | (idx >= num_labels)
    if bad.any():
        raise ValueError(f"{where}: sparse label index {indices[bad][0]} is outside "
                         f"[0, num_labels={num_labels})")
    dense = np.zeros(num_labels, dtype)
    return dense, idx


#: the dtype of a single label by the tensor's data type
_ONE_LABEL = {pb.FLOAT: np.float32, pb.INT32: np.int32}


@functools.lru_cache(maxsize=None)
def _parts(image_available, label_type, additional_inputs, bbox):
    """What each tensor of a Caffe2 record holds, in order."""
    return (["image"] if image_available else []) + \
        [LABEL_TYPES[label_type]] * _LABEL_TENSORS[label_type] + \
        ["additional input"] * additional_inputs + (["bbox"] if bbox else [])


def parse_tensor_protos(raw: bytes, where: str, image_available=True, label_type=0,
                        num_labels=1, additional_inputs=0, bbox=False):
    """The outputs of one Caffe2 record (see the module docstring for their order).

    Raises
    ------
    ValueError
        Not a ``TensorProtos`` (DALI's words: "Error while parsing Caffe2 file: ..."), a record
        with another number of tensors than ``image_available``, ``label_type``,
        ``additional_inputs`` and ``bbox`` call for, a tensor of the wrong data type or size
        (a single label holding several values, a bounding box not of 4 INT32, an index
        outside ``num_labels``), naming ``where``.
    """
    if label_type == 0 and image_available and not additional_inputs and not bbox:
        parts = tensor_protos_parts(raw)    # the usual record, from its bytes (caffe_wire.py)
        if parts is not None:
            start, end, label, is_float = parts
            return [np.frombuffer(raw, np.uint8, end - start, start).copy(),
                    np.array([label], np.float32 if is_float else np.int32)]
    try:
        protos = pb.TensorProtos.FromString(raw).protos
    except DecodeError:
        raise ValueError(f"Error while parsing Caffe2 file: {where} (raw data length: "
                         f"{len(raw)} bytes): not a caffe2.TensorProtos protobuf "
                         f"message") from None
    if label_type == 0 and image_available and not additional_inputs and not bbox and \
            len(protos) == 2:
        # the usual record (an encoded image, one label): what the general code below
        # gives, with fewer look-ups
        t0, t1 = protos
        if t0.data_type == pb.STRING and t1.data_type in _ONE_LABEL:
            images, vals = t0.string_data, (t1.int32_data if t1.data_type == pb.INT32
                                            else t1.float_data)
            if len(images) and len(vals) == 1:
                return [np.frombuffer(images[0], np.uint8).copy(),
                        np.fromiter(vals, _ONE_LABEL[t1.data_type], 1)]
    n_label = _LABEL_TENSORS[label_type]
    parts = _parts(bool(image_available), label_type, additional_inputs, bool(bbox))
    if len(protos) != len(parts):
        raise ValueError(f"{where}: the record holds {len(protos)} tensor(s), expected "
                         f"{len(parts)} ({', '.join(parts) or 'none'}) for image_available="
                         f"{bool(image_available)}, label_type={label_type} "
                         f"({LABEL_TYPES[label_type]}), additional_inputs={additional_inputs}"
                         f", bbox={bool(bbox)}; check label_type")
    out, k = [], 0
    if image_available:
        t = protos[0]
        kind = pb.DATA_TYPES.get(t.data_type, str(t.data_type))
        if kind == "STRING":
            if len(t.string_data) < 1:
                raise ValueError(f"{where}: the image tensor (STRING) holds no string")
            out.append(np.frombuffer(t.string_data[0], np.uint8).copy())
        elif kind == "BYTE":
            dims = list(t.dims)
            if len(dims) not in (2, 3):
                raise ValueError(f"{where}: the raw image tensor (BYTE) has dims {dims}; "
                                 f"expected (H, W) or (H, W, C)")
            out.append(_raw_image(t.byte_data, (dims[0], dims[1], dims[2] if len(dims) == 3
                                                else 1), where))
        else:
            raise ValueError(f"{where}: the image tensor has data_type {kind}; expected "
                             f"STRING (encoded) or BYTE (raw pixels)")
        k = 1
    if label_type != 4:
        what = f"label ({LABEL_TYPES[label_type]})"
        lab = _values(protos[k], where, what, ("FLOAT", "INT32"))
        if label_type == 0:
            if lab.size != 1:
                raise ValueError(f"{where}: a single label (label_type=0) tensor holds "
                                 f"{lab.size} values; use label_type=2 (dense) for vectors")
            out.append(lab)
        elif label_type == 2:
            out.append(lab)
        elif label_type == 1:
            dense, idx = _sparse(lab, num_labels, lab.dtype, where)
            dense[idx] = 1
            out += [dense, lab]
        else:
            weights = _values(protos[k + 1], where, "label weights", ("FLOAT",))
            if weights.size != lab.size:
                raise ValueError(f"{where}: {lab.size} sparse label indices but "
                                 f"{weights.size} weights")
            dense, idx = _sparse(lab, num_labels, np.float32, where)
            dense[idx] = weights
            out += [dense, lab]
        k += n_label
    for j in range(additional_inputs):
        out.append(_values(protos[k + j], where, f"additional input {j}"))
    k += additional_inputs
    if bbox:
        box = _values(protos[k], where, "bbox", ("INT32",))
        if box.size != 4:
            raise ValueError(f"{where}: the bbox tensor holds {box.size} values; expected 4")
        out.append(box)
    return out


def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}; got {value!r}")
    return int(value)


class _LMDBCore(FileReaderCore):
    """What both Caffe cores share: the LMDB listing and a loader that parses records."""

    who = "readers.Caffe"

    def _init_lmdb(self, path, kwargs, lazy_init, defer_shard_check):
        self.paths = path_list(path, "path", self.who)
        self._store = None
        super().__init__(lazy_init=True, **kwargs)
        self.list_now(lazy_init, defer_shard_check)

    def build_index(self):
        self._store = LMDBStore(self.paths, self.who)
        self._records = self._store.records()
        names = tuple(self._store.name(db, key) for db, key in self._records)
        return FileIndex(names, np.zeros(len(names), np.int32), f"LMDB database(s) {self.paths}")

    def parse(self, raw, where):
        """The output arrays of one record (subclasses)."""
        raise NotImplementedError

    def common_form(self):
        """``"caffe"`` / ``"caffe2"`` when the outputs are (image, label) and batches of
        records in the usual form can be read by ``caffe_wire.common_batch``, else None."""
        return None

    def make_loader(self, index, with_indices):
        store, records, parse, n_out = self._store, self._records, self.parse, self.num_outputs
        names = index.paths         # store.name of each record, made once by build_index

        common = self.common_form()
        caffe2 = common == "caffe2"

        def common_batch_of(values):
            return common_batch(values, caffe2)

        def load(indices):
            idx = indices.tolist()
            wanted = [records[i] for i in idx]
            # the usual records: parsed and copied out of views of the database's map
            outs = store.read_with(wanted, common_batch_of) if common else None
            if outs is not None:        # every record of the batch in the usual form
                return outs + [idx] if with_indices else outs
            raws = store.read(wanted)
            outs = [[] for _ in range(n_out)]
            for i, raw in zip(idx, raws):
                try:
                    arrays = parse(raw, names[i])
                except ValueError as e:     # DALI's readers raise RuntimeError
                    raise RuntimeError(f"{self.who}: {e}") from None
                for o, a in zip(outs, arrays):
                    o.append(a)
            if with_indices:
                return outs + [idx]
            return outs

        return load


class CaffeReaderCore(_LMDBCore):
    """Reads the ``[image][, label]`` of every record of Caffe LMDB databases.

    Parameters
    ----------
    path : str or list of str
        LMDB databases (folders), read one after another, each in key order.
    image_available, label_available : bool, default True
        Which outputs the records hold (DALI's arguments): the outputs are the image (when
        available) then the label (when available).
    dont_use_mmap : bool
        Accepted for compatibility (LMDB maps its file).
    **kwargs
        Sharding, shuffling, padding, prefetching: those of ``FileReaderCore``.
    """

    kind = "Caffe reader"
    who = "readers.Caffe"
    state_format = CAFFE_STATE_FORMAT

    def __init__(self, *, path=None, image_available=True, label_available=True,
                 dont_use_mmap=False, lazy_init=False, defer_shard_check=False, **kwargs):
        self.image_available = bool(image_available)
        self.label_available = bool(label_available)
        self.output_names = (["images"] if self.image_available else []) + \
            (["labels"] if self.label_available else [])
        self.num_outputs = len(self.output_names)
        if not self.num_outputs:
            raise ValueError("readers.Caffe: image_available=False and label_available=False "
                             "leave the reader without outputs")
        self._init_lmdb(path, kwargs, lazy_init, defer_shard_check)

    def parse(self, raw, where):
        return parse_datum(raw, where, self.image_available, self.label_available)

    def common_form(self):
        return "caffe" if self.image_available and self.label_available else None


class Caffe2ReaderCore(_LMDBCore):
    """Reads the outputs of every record of Caffe2 LMDB databases.

    Parameters
    ----------
    path : str or list of str
        LMDB databases (folders), read one after another, each in key order.
    image_available : bool, default True
    label_type : int, default 0
        0 single label, 1 sparse multi-label, 2 dense multi-label, 3 weighted sparse
        multi-label, 4 no label (DALI's values; see the module docstring).
    num_labels : int, default 1
        Length of the multi-hot / weights vector of label types 1 and 3.
    additional_inputs : int, default 0
        Tensors after the label, each an output of its own.
    bbox : bool, default False
        A last tensor holds a bounding box (INT32, 4 values), the last output.
    dont_use_mmap : bool
        Accepted for compatibility.
    **kwargs
        Those of ``FileReaderCore``.

    Raises
    ------
    ValueError
        A ``label_type`` outside 0..4, ``num_labels`` < 1, ``additional_inputs`` < 0, or no
        output at all.
    """

    kind = "Caffe2 reader"
    who = "readers.Caffe2"
    state_format = CAFFE2_STATE_FORMAT

    def __init__(self, *, path=None, image_available=True, label_type=0, num_labels=1,
                 additional_inputs=0, bbox=False, dont_use_mmap=False, lazy_init=False,
                 defer_shard_check=False, **kwargs):
        if isinstance(label_type, bool) or label_type not in LABEL_TYPES:
            raise ValueError(f"readers.Caffe2: label_type={label_type!r} is not one of "
                             + ", ".join(f"{k} ({v})" for k, v in LABEL_TYPES.items()))
        self.image_available = bool(image_available)
        self.label_type = int(label_type)
        self.num_labels = _check_int(num_labels, "num_labels", 1)
        self.additional_inputs = _check_int(additional_inputs, "additional_inputs", 0)
        self.bbox = bool(bbox)
        self.output_names = (["images"] if self.image_available else []) + \
            ["labels", "label_indices"][:LABEL_OUTPUTS[self.label_type]] + \
            [f"additional_{j}" for j in range(self.additional_inputs)] + \
            (["bbox"] if self.bbox else [])
        self.num_outputs = len(self.output_names)
        if not self.num_outputs:
            raise ValueError("readers.Caffe2: image_available=False with label_type=4 "
                             "(NO_LABEL), no additional inputs and no bbox leaves the reader "
                             "without outputs")
        self._init_lmdb(path, kwargs, lazy_init, defer_shard_check)

    def parse(self, raw, where):
        return parse_tensor_protos(raw, where, self.image_available, self.label_type,
                                   self.num_labels, self.additional_inputs, self.bbox)

    def common_form(self):
        usual = self.image_available and self.label_type == 0 and not self.additional_inputs \
            and not self.bbox
        return "caffe2" if usual else None
