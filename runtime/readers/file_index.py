"""Listing the (file, label) pairs of a File reader.

Three ways to describe a dataset, as in DALI's ``fn.readers.file``:

* ``file_root`` alone: one sub-folder per class; label = index of the class folder in the
  sorted list of (filtered) sub-folders; files directly inside each class folder (not deeper),
  matched by ``file_filters``, sorted by name.
* ``file_list``: a text file with one ``path label`` pair per line; paths are relative to
  ``file_root`` when given, else to the folder holding the list.
* ``files`` (+ optional ``labels``, default ``0..N-1``): paths relative to ``file_root`` when
  given.

Unlike DALI 2.4, hidden entries (names starting with ``.``: ``.ipynb_checkpoints``,
``._img.jpg``, ``.DS_Store``) are skipped in the ``file_root`` mode, and every listed file is
checked to exist when the index is built (see ``docs/semantics.md``).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_FILE_FILTERS",
    "FileIndex",
    "build_file_index",
    "index_file_root",
    "parse_file_list",
    "index_files",
    "check_files_exist",
]

#: DALI 2.4's default ``file_filters`` of ``fn.readers.file``.
DEFAULT_FILE_FILTERS = (
    "*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff", "*.pnm", "*.ppm", "*.pgm",
    "*.pbm", "*.jp2", "*.webp", "*.flac", "*.ogg", "*.wav",
)


@dataclass(frozen=True)
class FileIndex:
    """The dataset of a File reader, in reading order.

    Attributes
    ----------
    paths : tuple of str
        Path of every sample (as given or joined with ``file_root``), in dataset order.
    labels : numpy.ndarray
        int32, shape (N,): the label of every sample.
    source : str
        Human-readable description of where the list came from (for error messages).
    """

    paths: tuple
    labels: np.ndarray
    source: str

    def __len__(self):
        return len(self.paths)


def _as_str_tuple(value, arg_name):
    if isinstance(value, (str, os.PathLike)):
        return (os.fspath(value),)
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(
            f"`{arg_name}` must be a string or a list of strings; got {value!r}"
        ) from None
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(
                f"`{arg_name}` must contain only strings; got {item!r} "
                f"({type(item).__name__})"
            )
    return tuple(os.fspath(item) for item in items)


def _matcher(patterns, case_sensitive):
    """Return ``name -> bool``: does ``name`` match at least one glob pattern."""
    if case_sensitive:
        return lambda name: any(fnmatch.fnmatchcase(name, p) for p in patterns)
    lowered = tuple(p.lower() for p in patterns)
    return lambda name: any(fnmatch.fnmatchcase(name.lower(), p) for p in lowered)


def _is_hidden(name):
    return name.startswith(".")


def index_file_root(file_root, file_filters=DEFAULT_FILE_FILTERS,
                    case_sensitive_filter=False, dir_filters=None):
    """List a class-per-folder tree.

    Parameters
    ----------
    file_root : str
        Folder holding one sub-folder per class.
    file_filters : str or sequence of str
        Glob patterns; a file is kept when its name matches at least one.
    case_sensitive_filter : bool
        Match ``file_filters`` case-sensitively (DALI's default: False).
    dir_filters : str or sequence of str, optional
        Glob patterns selecting the class folders (matched case-sensitively on the name).

    Returns
    -------
    FileIndex
        Files sorted by class folder name, then file name; label = index of the class folder
        among the sorted, filtered, non-hidden sub-folders (empty class folders keep their
        index, as in DALI).

    Raises
    ------
    ValueError
        If ``file_root`` is missing or not a folder, has no class sub-folders, or no file
        matches the filters.
    """
    root = os.fspath(file_root)
    if not os.path.isdir(root):
        what = "does not exist" if not os.path.exists(root) else "is not a folder"
        raise ValueError(f"file_root {root!r} {what}; expected a folder with one "
                         "sub-folder per class")
    filters = _as_str_tuple(file_filters, "file_filters")
    if not filters:
        raise ValueError("`file_filters` must contain at least one glob pattern; got []")
    keep_file = _matcher(filters, case_sensitive_filter)
    keep_dir = (lambda name: True) if dir_filters is None else \
        _matcher(_as_str_tuple(dir_filters, "dir_filters"), True)

    with os.scandir(root) as entries:
        classes = sorted(e.name for e in entries
                         if not _is_hidden(e.name) and e.is_dir() and keep_dir(e.name))
    if not classes:
        raise ValueError(
            f"file_root {root!r} has no class sub-folders; expected one sub-folder per class "
            f"(e.g. {os.path.join(root, 'cat', 'img0.jpg')!r}), or use `file_list`/`files`"
        )
    paths, labels = [], []
    for label, cls in enumerate(classes):
        folder = os.path.join(root, cls)
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries
                           if not _is_hidden(e.name) and keep_file(e.name) and e.is_file())
        paths.extend(os.path.join(folder, n) for n in names)
        labels.extend([label] * len(names))
    if not paths:
        raise ValueError(
            f"file_root {root!r}: no file in its {len(classes)} class sub-folder(s) matches "
            f"file_filters={list(filters)} (case_sensitive_filter={case_sensitive_filter})"
        )
    return FileIndex(tuple(paths), np.asarray(labels, dtype=np.int32), f"file_root {root!r}")


def _parse_label(text):
    """Parse an integer label; None when ``text`` is not an integer literal."""
    body = text[1:] if text[:1] in "+-" else text
    if not body.isdigit() or not body.isascii():
        return None
    value = int(text)
    if not -2**31 <= value < 2**31:
        return None
    return value


def parse_file_list(file_list, file_root=None):
    """Read a ``path label`` list file.

    Each non-blank line holds a file name and an integer label separated by whitespace; the
    label is the last whitespace-separated field, so names may contain spaces. Leading and
    trailing whitespace of a line is ignored.

    Parameters
    ----------
    file_list : str
        Path of the list file (UTF-8 text).
    file_root : str, optional
        Folder the names are relative to; default: the folder of ``file_list``.

    Returns
    -------
    FileIndex
        Samples in the order of the list; labels int32.

    Raises
    ------
    ValueError
        If the list cannot be read, a line is malformed (message names the list file, the
        1-based line number and the line), or the list has no entries.
    """
    list_path = os.fspath(file_list)
    try:
        with open(list_path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ValueError(f"file_list {list_path!r} cannot be read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ValueError(f"file_list {list_path!r} is not UTF-8 text: {e}") from e
    base = os.fspath(file_root) if file_root is not None else os.path.dirname(list_path)
    paths, labels = [], []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        parts = line.rsplit(None, 1)
        label = _parse_label(parts[1]) if len(parts) == 2 else None
        if label is None:
            raise ValueError(
                f"file_list {list_path!r}, line {number}: expected '<file name> <integer "
                f"label>' (int32); got {raw!r}"
            )
        paths.append(os.path.join(base, parts[0].rstrip()))
        labels.append(label)
    if not paths:
        raise ValueError(f"file_list {list_path!r} has no entries; expected one "
                         "'<file name> <label>' pair per line")
    return FileIndex(tuple(paths), np.asarray(labels, dtype=np.int32),
                     f"file_list {list_path!r}")


def index_files(files, labels=None, file_root=None):
    """Index an explicit list of files.

    Parameters
    ----------
    files : str or sequence of str
        File paths, relative to ``file_root`` when given.
    labels : int or sequence of int, optional
        One label per file; default ``0..N-1`` (DALI's rule: the position in ``files``).
    file_root : str, optional
        Folder the paths are relative to.

    Returns
    -------
    FileIndex

    Raises
    ------
    ValueError
        If ``files`` is empty or ``labels`` has a different length or a value outside int32.
    TypeError
        If ``files`` holds non-strings or ``labels`` non-integers.
    """
    names = _as_str_tuple(files, "files")
    if not names:
        raise ValueError("`files` is empty; expected at least one file path")
    if labels is None:
        values = list(range(len(names)))
    else:
        values = [labels] if isinstance(labels, (int, np.integer)) else list(labels)
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"`labels` must contain integers; got {v!r} "
                                f"({type(v).__name__})")
            if not -2**31 <= int(v) < 2**31:
                raise ValueError(f"`labels` value {int(v)} does not fit in int32")
        if len(values) != len(names):
            raise ValueError(f"`labels` has {len(values)} entries but `files` has "
                             f"{len(names)}; expected one label per file")
    paths = names if file_root is None else tuple(
        os.path.join(os.fspath(file_root), n) for n in names)
    return FileIndex(paths, np.asarray(values, dtype=np.int32), "files")


def check_files_exist(index):
    """Raise ValueError naming the first listed path that is not a readable file.

    Parameters
    ----------
    index : FileIndex

    Raises
    ------
    ValueError
        Naming the missing path, its position and the source of the list.
    """
    isfile = os.path.isfile
    for i, path in enumerate(index.paths):
        if not isfile(path):
            what = "is not a file" if os.path.exists(path) else "does not exist"
            raise ValueError(f"{index.source}: sample {i} {path!r} {what}")


def build_file_index(*, file_root=None, file_list=None, files=None, labels=None,
                     file_filters=DEFAULT_FILE_FILTERS, case_sensitive_filter=False,
                     dir_filters=None):
    """Build the dataset of a File reader from DALI's arguments.

    Parameters
    ----------
    file_root, file_list, files, labels, file_filters, case_sensitive_filter, dir_filters
        As in DALI's ``fn.readers.file`` (see the module docstring).

    Returns
    -------
    FileIndex
        Every path is checked to be an existing file.

    Raises
    ------
    ValueError
        On conflicting or missing arguments, and as raised by the three listing functions.
    """
    if file_list is not None and files is not None:
        raise ValueError("`file_list` and `files` are mutually exclusive; got both")
    if labels is not None and files is None:
        raise ValueError("`labels` can only be given together with `files`")
    if file_list is not None:
        index = parse_file_list(file_list, file_root)
    elif files is not None:
        index = index_files(files, labels, file_root)
    elif file_root is not None:
        return index_file_root(file_root, file_filters, case_sensitive_filter, dir_filters)
    else:
        raise ValueError("File reader needs `file_root`, `file_list` or `files`; got none")
    check_files_exist(index)
    return index
