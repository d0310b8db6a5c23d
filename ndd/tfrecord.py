"""Feature descriptions of ``ndd.readers.TFRecord`` (DALI's ``nvidia.dali.tfrecord``).

``int64``, ``string``, ``float32`` name the value types (DALI's values 0, 1, 2), and
:func:`FixedLenFeature` / :func:`VarLenFeature` describe one feature of the
``tf.train.Example`` records, as TensorFlow's ``tf.io.FixedLenFeature`` / ``VarLenFeature``.
"""
from runtime.readers.tfrecord import write_tfrecord as _write_tfrecord
from runtime.readers.tfrecord_reader import Feature

__all__ = ["Feature", "FixedLenFeature", "VarLenFeature", "int64", "string", "float32",
           "write_tfrecord"]

int64 = 0
string = 1
float32 = 2


def FixedLenFeature(shape, dtype, default_value=None):  # noqa: N802 (DALI's name)
    """A feature with a fixed number of values.

    Parameters
    ----------
    shape : sequence of int
        The output's shape (``[]``: a scalar); the record must hold ``prod(shape)`` values.
        For ``string``, ignored: the output is the bytes of the first value (uint8, 1-D).
    dtype : int64, float32 or string
    default_value : scalar, optional
        The value of every element when a record lacks the feature.

    Returns
    -------
    Feature
    """
    return Feature(False, shape, dtype, default_value)


def VarLenFeature(*args):  # noqa: N802 (DALI's name)
    """A feature with any number of values: ``VarLenFeature(dtype, default_value)`` (a 1-D
    output) or ``VarLenFeature(partial_shape, dtype, default_value)`` (shape
    ``(n // prod(partial_shape),) + partial_shape``).

    Returns
    -------
    Feature

    Raises
    ------
    TypeError
        Not 2 or 3 arguments.
    """
    if len(args) == 2:
        return Feature(True, None, args[0], args[1])
    if len(args) == 3:
        return Feature(True, args[0], args[1], args[2])
    raise TypeError(f"VarLenFeature takes (dtype, default_value) or (partial_shape, dtype, "
                    f"default_value); got {len(args)} argument(s)")


def write_tfrecord(path, examples, index_path=None) -> int:
    """Write a TFRecord file of ``tf.train.Example`` records (an ndd extension, for building
    small datasets without TensorFlow), and its DALI index file when ``index_path`` is given.

    Parameters
    ----------
    path : str
    examples : iterable of dict
        Per record, ``name -> value``: bytes/str or a list of them (a BytesList), floats or a
        float array (FloatList), ints or an int array (Int64List).
    index_path : str, optional

    Returns
    -------
    int
        The number of records written.
    """
    return _write_tfrecord(path, examples, index_path)
