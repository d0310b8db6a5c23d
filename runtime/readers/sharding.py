"""Which samples a reader visits in which epoch, and how they are cut into batches.

Semantics of DALI's readers (``shard_id``, ``num_shards``, ``stick_to_shard``,
``pad_last_batch``, ``random_shuffle``, ``shuffle_after_epoch``), observed on DALI 2.4:

* shard ``k`` of ``n`` over ``N`` samples covers ``[floor(k*N/n), floor((k+1)*N/n))``;
* without ``stick_to_shard`` the shard advances by one every epoch: epoch ``e`` reads shard
  ``(shard_id + e) % n``;
* with ``pad_last_batch`` every shard is padded to ``ceil(N/n)`` samples, and the last batch
  to the full batch size, by repeating the last sample (so all shards yield the same number
  of batches);
* ``shuffle_after_epoch`` permutes the whole dataset every epoch (the same way on every shard)
  before sharding.

Deliberate differences (``docs/semantics.md``): an epoch visits every sample of its
shard exactly once (the last batch is short unless ``pad_last_batch``); ``random_shuffle``
is a seeded full permutation of the shard per epoch, not DALI's shuffle buffer.
All functions are pure; the order of an epoch depends only on its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ShardSpec", "shard_range", "epoch_order", "split_batches"]


def shard_range(shard_id, num_shards, num_samples):
    """Return ``(begin, end)``: the sample range of one shard (DALI's split).

    Parameters
    ----------
    shard_id : int
        0-based shard index, ``0 <= shard_id < num_shards``.
    num_shards : int
        Number of shards, >= 1.
    num_samples : int
        Dataset size N.

    Returns
    -------
    tuple of int
        ``(floor(shard_id*N/num_shards), floor((shard_id+1)*N/num_shards))``.
    """
    return (shard_id * num_samples // num_shards,
            (shard_id + 1) * num_samples // num_shards)


def _permutation(seed, epoch, n):
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch])))
    return rng.permutation(n)


@dataclass(frozen=True)
class ShardSpec:
    """Sharding and shuffling settings of one reader.

    Attributes
    ----------
    num_samples : int
        Dataset size N (>= num_shards).
    num_shards, shard_id : int
        DALI's arguments; ``shard_id`` is the shard of epoch 0.
    stick_to_shard, pad_last_batch, random_shuffle, shuffle_after_epoch : bool
        DALI's flags.
    seed : int
        Seed of ``random_shuffle`` (non-negative).
    shuffle_after_epoch_seed : int
        Seed of ``shuffle_after_epoch`` (non-negative; equal on every shard).
    """

    num_samples: int
    num_shards: int = 1
    shard_id: int = 0
    stick_to_shard: bool = False
    pad_last_batch: bool = False
    random_shuffle: bool = False
    seed: int = 0
    shuffle_after_epoch: bool = False
    shuffle_after_epoch_seed: int = 0

    def shard_of_epoch(self, epoch):
        """Shard read in ``epoch`` (0-based): fixed, or rotating by one per epoch."""
        if self.stick_to_shard:
            return self.shard_id
        return (self.shard_id + epoch) % self.num_shards

    def shard_size(self, epoch=0):
        """Samples yielded per epoch before batch padding (shard padded when pad_last_batch).

        This is DALI's per-shard epoch size: ``ceil(N/n)`` with ``pad_last_batch``, else the
        size of the shard read in ``epoch``.
        """
        if self.pad_last_batch:
            return -(-self.num_samples // self.num_shards)
        begin, end = shard_range(self.shard_of_epoch(epoch), self.num_shards,
                                 self.num_samples)
        return end - begin


def epoch_order(spec, epoch):
    """Dataset indices visited in one epoch, in order, shard padding included.

    Parameters
    ----------
    spec : ShardSpec
    epoch : int
        0-based epoch number.

    Returns
    -------
    numpy.ndarray
        int64, shape (spec.shard_size(epoch),): indices into the dataset. With
        ``pad_last_batch`` the shard is padded by repeating its last (possibly shuffled)
        sample.
    """
    n = spec.num_samples
    begin, end = shard_range(spec.shard_of_epoch(epoch), spec.num_shards, n)
    if spec.shuffle_after_epoch:
        order = _permutation(spec.shuffle_after_epoch_seed, epoch, n)[begin:end]
    else:
        order = np.arange(begin, end, dtype=np.int64)
    if spec.random_shuffle:
        order = order[_permutation(spec.seed, epoch, len(order))]
    target = spec.shard_size(epoch)
    if len(order) < target:
        order = np.concatenate([order, np.full(target - len(order), order[-1])])
    return order.astype(np.int64, copy=False)


def split_batches(order, batch_size, pad_last_batch):
    """Cut an epoch's order into batches.

    Parameters
    ----------
    order : numpy.ndarray
        1-D indices (from ``epoch_order``).
    batch_size : int
        >= 1.
    pad_last_batch : bool
        Pad the last batch to ``batch_size`` by repeating its last sample (DALI); otherwise
        the last batch is short.

    Returns
    -------
    list of numpy.ndarray
        ``ceil(len(order) / batch_size)`` index arrays.
    """
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if pad_last_batch and batches and len(batches[-1]) < batch_size:
        last = batches[-1]
        batches[-1] = np.concatenate([last, np.full(batch_size - len(last), last[-1])])
    return batches
