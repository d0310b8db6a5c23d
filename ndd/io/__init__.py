"""DALI's ``io`` operators: ``ndd.io.file.read`` (raw file contents from encoded paths)."""
from ndd.io import file

__all__ = ["file"]
