"""``ndd.readers.COCO``: images of a COCO dataset with their boxes, labels and polygons (DALI
2.4's ``readers.COCO`` / ``fn.readers.coco``, CPU backend).

Parsing and DALI's rules are ``runtime/readers/coco.py``; iteration, direct calls and state
are those of every reader (``ndd._reader_front.ReaderFront``).
"""

import inspect as _inspect
import warnings as _warnings

from compiler.ir import Value as _Value, ValueMeta as _ValueMeta
from ndd._batch import Batch as _Batch
from ndd._construct import ENCODED as _ENC, encoded_batch as _encoded_batch
from ndd._reader_front import ReaderFront as _ReaderFront, \
    check_max_batch_size as _check_max_batch_size
from ndd._tensor import Tensor as _Tensor
from runtime.readers.coco import CocoReaderCore as _CocoReaderCore
from runtime.readers.file_reader import FileReaderCore as _FileReaderCore
from runtime.storage import SampleList as _SampleList

# Accepted for compatibility with DALI's readers.COCO and ignored.
_IGNORED = ("skip_cached_images", "tensor_init_bytes", "bytes_per_sample_hint", "preserve",
            "dont_use_mmap", "read_ahead")
# DALI's deprecated spellings: old name -> new name
_DEPRECATED = {"save_img_ids": "image_ids", "dump_meta_files": "save_preprocessed_annotations",
               "dump_meta_files_path": "save_preprocessed_annotations_dir",
               "meta_files_path": "preprocessed_annotations"}

_BOXES = _ValueMeta(dtype="float32", ndim=2, layout="")
_LABELS = _ValueMeta(dtype="int32", ndim=1, layout="")
_POLYS = _ValueMeta(dtype="int32", ndim=2, layout="")
_VERTS = _ValueMeta(dtype="float32", ndim=2, layout="")
_IDS = _ValueMeta(dtype="int32", ndim=1, layout="")
_MASKS = _ValueMeta(dtype="int32", ndim=3, layout="HWC")
_METAS = (_BOXES, _LABELS, _POLYS, _VERTS, _IDS, _MASKS)


class COCO(_ReaderFront):
    """Reads the images of a COCO dataset with their annotations.

    Parameters (DALI 2.4's names and defaults)
    -------------------------------------------
    file_root : str
        Folder of the images (the ``file_name`` of the JSON ``images`` are relative to it).
    annotations_file : str
        COCO "instances" JSON (``images``, ``categories``, ``annotations``).
    images : str or list of str, optional
        File names to read, in this order (duplicates read again); default all the listed
        images, ordered by image id.
    ltrb : bool, default False
        Boxes as ``[left, top, right, bottom]`` instead of ``[x, y, width, height]``.
    ratio : bool, default False
        Box and polygon coordinates relative to the image's width and height (of the JSON).
    skip_empty : bool, default False
        Skip images left without annotations.
    size_threshold : float, default 0.1
        Drop objects whose box is narrower or lower than this (pixels).
    include_iscrowd : bool, default True
        Keep the crowd annotations (``iscrowd=1``).
    avoid_class_remapping : bool, default False
        Labels are the category ids; otherwise ``1..K`` in the order ``categories`` lists them.
    polygon_masks : bool, default False
        Add the ``polygons`` and ``vertices`` outputs.
    pixelwise_masks : bool, default False
        Add the ``pixelwise_masks`` output (exclusive with ``polygon_masks``): polygons
        rasterised as the COCO API does, RLEs decoded (DALI 2.4 leaves RLEs out: see
        ``docs/semantics.md``).
    masks : bool, default False
        DALI's deprecated ``polygon_masks`` (with a ``DeprecationWarning``): the same outputs,
        the polygons' ranges in coordinates (twice the vertex indices).
    image_ids : bool, default False
        Add the ``image_ids`` output (``save_img_ids``: DALI's deprecated spelling); also
        saves (reads) them with the preprocessed annotations.
    preprocessed_annotations : str, optional
        A folder of DALI's preprocessed annotation files to read instead of
        ``annotations_file`` (``ltrb``, ``ratio``, ``skip_empty``, ``size_threshold`` and
        ``images`` were applied when they were saved: giving them raises DALI's
        RuntimeError). ``meta_files_path``: DALI's deprecated spelling.
    save_preprocessed_annotations : bool, default False
        Write the annotations as DALI's preprocessed files (the same bytes as DALI's) to
        ``save_preprocessed_annotations_dir`` when the dataset is listed
        (``dump_meta_files`` / ``dump_meta_files_path``: DALI's deprecated spellings).
    random_shuffle, initial_fill, seed, shard_id, num_shards, stick_to_shard, pad_last_batch,
    shuffle_after_epoch, shuffle_after_epoch_seed, prefetch_queue_depth, lazy_init
        As ``readers.File`` (the shared machinery of ``runtime/readers``).
    skip_cached_images, tensor_init_bytes, bytes_per_sample_hint, preserve, dont_use_mmap,
    read_ahead
        Accepted for compatibility with DALI and ignored.
    max_batch_size, name : positional or keyword, optional (DALI's order)
    device : "cpu"
    enable_checkpointing : bool, default False

    Outputs per batch (DALI's order): ``images`` (uint8 (size,), the encoded files),
    ``bboxes`` (float32 (M, 4)), ``labels`` (int32 (M,)), then with ``polygon_masks``
    ``polygons`` (int32 (P, 3): mask index, first vertex, end vertex) and ``vertices``
    (float32 (V, 2)), or with ``pixelwise_masks`` the ``pixelwise_masks`` (int32 (H, W, 1),
    layout "HWC": at every pixel the largest label of the objects covering it, 0 for none),
    then with ``image_ids`` the ``image_ids`` (int32 (1,)).

    Raises
    ------
    ValueError / TypeError
        For bad arguments (naming them), a malformed annotations file (naming the file, the
        annotation id and its image id), ``images`` naming an image the file does not list,
        and a missing or inconsistent preprocessed annotation file (naming it).
    RuntimeError
        An unreadable annotations file, or an image that cannot be read (when it is read);
        with ``preprocessed_annotations``, an argument DALI does not take with them.
    """

    KIND = "readers.COCO"
    STATE_KIND = "ndd.readers.COCO"

    def __init__(self, max_batch_size=None, name=None, *, enable_checkpointing: bool = False,
                 device="cpu", **kwargs):
        if device not in ("cpu", None):
            raise ValueError(f"readers.COCO: device={device!r}; the reader runs on the CPU "
                             f"(its outputs are encoded files and annotations); expected "
                             f"'cpu'")
        _check_max_batch_size(max_batch_size, "readers.COCO")
        # None is DALI's "not set": the default
        kwargs = {k: v for k, v in kwargs.items() if v is not None and k != "num_inputs"}
        if name is not None:
            kwargs["name"] = name
        for knob in _IGNORED:
            kwargs.pop(knob, None)
        for old, new in _DEPRECATED.items():
            if old in kwargs:
                _warnings.warn(f"The argument `{old}` is a deprecated alias for `{new}`. "
                               f"Use `{new}` instead.", DeprecationWarning, stacklevel=2)
                if new in kwargs:
                    raise ValueError(f"readers.COCO: `{old}` and `{new}` are the same "
                                     f"argument; give only `{new}`")
                kwargs[new] = kwargs.pop(old)
        legacy = bool(kwargs.pop("masks", False))    # DALI's legacy polygons
        if legacy:
            _warnings.warn("The argument `masks` is deprecated: use `polygon_masks` instead "
                           "(`masks` gives the polygons' ranges in coordinates, twice the "
                           "vertex indices of `polygon_masks`)", DeprecationWarning,
                           stacklevel=2)
            if kwargs.get("polygon_masks"):
                raise ValueError("readers.COCO: give `polygon_masks` or the deprecated "
                                 "`masks`, not both")
        self.image_ids = bool(kwargs.get("image_ids", False))
        valid = (set(_inspect.signature(_CocoReaderCore.__init__).parameters) |
                 set(_inspect.signature(_FileReaderCore.__init__).parameters)) - {
            "self", "kwargs", "defer_shard_check", "files", "file_list", "labels",
            "file_filters", "case_sensitive_filter", "dir_filters", "dont_use_mmap",
            "read_ahead", "coordinate_ranges"}
        unknown = sorted(set(kwargs) - valid)
        if unknown:
            raise TypeError(f"readers.COCO got unexpected argument(s) {', '.join(unknown)}; "
                            f"valid: enable_checkpointing, "
                            f"{', '.join(sorted(valid))}")
        if legacy:
            kwargs.update(polygon_masks=True, coordinate_ranges=True)
        self.polygon_masks = bool(kwargs.get("polygon_masks", False))
        self.pixelwise_masks = bool(kwargs.get("pixelwise_masks", False))
        # DALI reports too many shards when the first epoch starts
        self._setup(_CocoReaderCore(defer_shard_check=True, **kwargs), max_batch_size,
                    enable_checkpointing, kwargs.get("name"))

    def _pick(self, outs):
        """DALI's outputs of the enabled kinds, in DALI's order."""
        images, boxes, labels, polys, verts, ids, masks = outs
        picked = [images, boxes, labels]
        if self.polygon_masks:
            picked += [polys, verts]
        if self.pixelwise_masks:
            picked.append(masks)
        if self.image_ids:
            picked.append(ids)
        return tuple(picked)

    def convert_batch(self, item):
        """The Batches of one loaded batch (each sample knows its image file)."""
        *outs, idx = item
        files = self._core.files
        info = [files[i] for i in idx]
        n = len(idx)
        images = _encoded_batch(outs[0], info)
        rest = [_Batch(_Value(meta.with_(batch_size=n), data=_SampleList(arrs, info)))
                for meta, arrs in zip(_METAS, outs[1:])]
        return self._pick([images, *rest])

    def convert_sample(self, item):
        """The Tensors of one loaded sample."""
        *outs, i = item
        src = [self._core.files[i]]
        return self._pick([_Tensor(_Value(meta, data=_SampleList([arr], src)))
                           for meta, arr in zip((_ENC,) + _METAS, outs)])

    def __repr__(self) -> str:
        return f"ndd.readers.COCO(name={self.name!r})"


__all__ = ["COCO"]
