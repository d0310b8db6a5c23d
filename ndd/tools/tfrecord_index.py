"""``ndd tfrecord-index FILE INDEX``: write DALI's index file of a TFRecord file (what DALI's
``tfrecord2idx`` script does, without TensorFlow): one ``"offset size"`` line per record.

Exit status 0 on success (the record count on stderr), 1 for an unreadable or truncated
file (one ``ndd tfrecord-index: error: ...`` line), 2 for bad usage.
"""
from __future__ import annotations

import sys

from runtime.readers.tfrecord import write_index

__all__ = ["main"]

USAGE = "usage: ndd tfrecord-index FILE INDEX"


def main(argv) -> int:
    """Run the command on ``argv`` (the arguments after ``tfrecord-index``)."""
    if len(argv) == 1 and argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + __doc__.split("\n\n")[0].split(": ", 1)[1])
        return 0
    if len(argv) != 2:
        print(f"{USAGE}\nndd tfrecord-index: error: expected 2 arguments (FILE INDEX), got "
              f"{len(argv)}", file=sys.stderr)
        return 2
    try:
        n = write_index(argv[0], argv[1])
    except (OSError, ValueError) as e:
        print(f"ndd tfrecord-index: error: {e}", file=sys.stderr)
        return 1
    print(f"ndd tfrecord-index: {n} record(s) of {argv[0]} indexed in {argv[1]}",
          file=sys.stderr)
    return 0
