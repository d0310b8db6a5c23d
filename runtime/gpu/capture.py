"""CUDA-graph capture and replay of a plan's GPU part (compile mode's per-batch work).

Off by default (:func:`set_enabled`, or ``NDD_CUDA_GRAPHS=1``); when on, a GPU plan is split
into a *prefix* (CPU steps, decoders, a decoding ``fused.image`` and anything else not
capturable, run as usual every time: decode stays outside the graph) and the capturable *region* after it (GPU steps only). The region is keyed by a
signature (ops, arguments without per-sample seeds, lanes, input metadata and shapes) and goes
through three stages per key:

1. **warm-up** -- run eagerly once, recording the sizes of the blocks it asks the pool for and
   of its descriptor uploads (:class:`Tape` in ``record`` mode; sizes are bucketed, and every
   eager run of the key raises them to the largest seen);
2. **capture** -- dedicated device blocks and pinned upload buffers of those sizes are allocated
   *before* ``begin_capture`` (nothing is allocated during capture); the region's kernels run
   again with the pool handing out the reserved blocks in order, their uploads, copies and
   launches captured; other lanes' streams fork from the origin stream through an event and
   join it at the end; the graph is launched once for this batch. ``instances`` (2) graphs are
   captured, each with its own blocks, used in turn, so the host prepares batch i+1 while the
   device may still run batch i;
3. **replay** -- the kernels' host logic runs again (descriptors computed for the new batch and
   written into the graph's pinned buffers), but nothing is enqueued: every launch is compared
   with the captured one (kernel, grid, block, shared memory, scalar arguments and device
   buffers must be equal; uploaded descriptors may differ), then the graph is launched. A batch
   larger than the reserved blocks runs eagerly and drops the graphs (the next batches capture
   with the larger sizes); a launch unlike the captured one runs eagerly too, and three in a row
   give up capture for that key. Results never depend on which path ran.

Results of a replay live in the graph's blocks, which the next replay of that instance
overwrites: they are copied out (device to device, on the launch stream) into pool blocks.
"""
from __future__ import annotations

import os
import threading

from compiler.ir import stage_names
from runtime.gpu import state as gpu_state
from runtime.gpu.memory import CaptureMismatch, bucket
from runtime.gpu.runner import run_gpu_node
from runtime.storage import DeviceSamples, is_device_storage

__all__ = ["Tape", "GraphCache", "set_enabled", "enabled", "cache", "capturable"]

#: ``NDD_CUDA_GRAPHS=1`` in the environment turns capture on from the start
_options = {"enabled": os.environ.get("NDD_CUDA_GRAPHS") == "1", "instances": 2}
_cache: dict = {}

#: ops whose kernels never go into a graph (decode runs ahead, outside the graph); a
#: ``fused.image`` node is captured unless it decodes (:func:`capturable`)
NOT_CAPTURABLE_PREFIXES = ("decoders.", "readers.")


def set_enabled(on: bool, instances: int | None = None) -> None:
    """Turn CUDA-graph capture/replay of GPU plans on or off (off by default)."""
    _options["enabled"] = bool(on)
    if instances is not None:
        if instances < 1:
            raise ValueError(f"instances must be >= 1, got {instances!r}")
        _options["instances"] = int(instances)
    _cache.pop("c", None)


def enabled() -> bool:
    """Whether GPU plans are captured and replayed as graphs."""
    return _options["enabled"]


def cache():
    """The process' :class:`GraphCache` when capture is enabled, else None."""
    if not _options["enabled"]:
        return None
    c = _cache.get("c")
    st = gpu_state.current()
    if c is None or c.state is not st:
        c = _cache["c"] = GraphCache(st, _options["instances"])
    return c


def capturable(node) -> bool:
    """Whether ``node`` may be part of a captured region: placed on a GPU and not a decoder or
    reader (those run ahead of the graph)."""
    if node.device.kind != "gpu" or node.op.startswith(NOT_CAPTURABLE_PREFIXES):
        return False
    return node.op != "fused.image" or stage_names(node.args)[:1] != ("decode",)


class LaunchMismatch(CaptureMismatch):
    """A replayed launch differs from the captured one (recapturing would not help)."""


class _Pending:
    """Stands for the event a replayed step records (the graph's end event, set later)."""

    __slots__ = ()


_PENDING = _Pending()


def _kernel_key(kernel):
    """What identifies a kernel across launches: a cupy Function's ``CUfunction`` pointer, a
    host-built kernel's (module, name), else the callable itself (a fresh handle object per
    lookup of the same kernel is the same kernel)."""
    ptr = getattr(kernel, "ptr", None)
    if isinstance(ptr, int):
        return ("ptr", ptr)
    owner = getattr(kernel, "_keep", None)
    name = getattr(kernel, "name", None)
    if owner is not None and isinstance(name, str):
        return ("host", id(owner), name)
    return ("id", id(kernel))


def _arg_sig(api, a):
    mem = api.memory_of(a) if hasattr(a, "shape") and not hasattr(a, "__array_interface__") \
        else None
    if mem is not None:
        return ("dev", id(mem), api.offset_of(a), tuple(a.shape), str(a.dtype))
    if hasattr(a, "item") and getattr(a, "ndim", 1) == 0:
        return ("num", a.item())
    return ("val", repr(a))


def _bytes(api, arr):
    """A device array's bytes as a flat uint8 device array (same memory)."""
    return api.array(api.memory_of(arr), api.offset_of(arr), (arr.nbytes,), "u1")


class Tape:
    """What a region's kernels do, recorded (``record``: eager warm-up; ``capture``) or checked
    (``replay``). :class:`runtime.gpu.runner.GpuKernelContext` routes its uploads, copies,
    launches, waits and event records here while a tape is set."""

    def __init__(self, api, staging, mode: str, pinned=None, launches=None, blocks=()):
        self.api, self.staging, self.mode = api, staging, mode
        self.blocks = {id(b.mem): b for b in blocks}    # the instance's reserved blocks
        self.pinned = pinned or []          # capture / replay: the instance's upload buffers
        self.uploads: list[int] = []        # record: upload sizes
        self.launches: list = [] if launches is None else launches
        self.events: set[int] = set()       # ids of events recorded while capturing
        self.used: list = []                # (arrays, stream) noted after the graph's launch
        self._u = self._l = 0

    @property
    def eager(self) -> bool:
        return self.mode == "record"

    def upload(self, host, dst, stream) -> None:
        if self.mode == "record":
            self.uploads.append(host.nbytes)
            self.staging.upload(host, dst, stream)
            return
        flat = host.reshape(-1).view("u1")
        self.fill(lambda buf: buf.__setitem__(slice(0, flat.nbytes), flat), host.nbytes, dst,
                  stream)

    def fill(self, write, nbytes: int, dst, stream) -> None:
        """An upload of ``nbytes`` that ``write(buf)`` puts into the pinned buffer."""
        if self.mode == "record":
            self.uploads.append(nbytes)
            self.staging.fill(write, nbytes, _bytes(self.api, dst), stream)
            return
        if self._u >= len(self.pinned) or self.pinned[self._u].nbytes < nbytes:
            raise CaptureMismatch(f"upload {self._u + 1} of {nbytes} bytes does not fit the "
                                  f"captured run's buffer")
        buf = self.pinned[self._u]
        self._u += 1
        write(buf)
        if self.mode == "capture":
            # the whole buffer: a later batch's upload may be longer than this one's
            api = self.api
            mem = api.memory_of(dst)
            off = api.offset_of(dst)
            n = min(buf.nbytes, self.blocks[id(mem)].nbytes - off)
            api.copy_h2d(api.array(mem, off, (n,), "u1"), buf[:n], stream)

    def copy(self, dst, src, stream) -> None:
        if self.mode != "replay":
            self.api.copy_d2d(dst, src, stream)

    def launch(self, kernel, grid, block, args, stream, shared_mem, reads, writes) -> None:
        sig = (_kernel_key(kernel), tuple(grid), tuple(block), int(shared_mem),
               tuple(_arg_sig(self.api, a) for a in args))
        if self.mode == "replay":
            if self._l >= len(self.launches) or self.launches[self._l] != sig:
                raise LaunchMismatch(f"launch {self._l + 1} differs from the captured one")
            self._l += 1
            return
        self.launches.append(sig)
        self.api.launch(kernel, grid, block, args, stream, shared_mem, reads=reads,
                        writes=writes)

    def wait(self, stream, event) -> None:
        if self.mode == "record":
            self.api.wait_event(stream, event)
        elif self.mode == "capture" and id(event) in self.events:
            self.api.wait_event(stream, event)
        # replay: the graph holds the waits; outside events were waited on before the launch

    def record(self, stream):
        if self.mode == "replay":
            return _PENDING
        ev = self.api.record_event(stream)
        if self.mode == "capture":
            self.events.add(id(ev))
        return ev

    def finished(self) -> bool:
        """Replay: every captured upload and launch was matched."""
        return self._u == len(self.pinned) and self._l == len(self.launches)


class _Instance:
    __slots__ = ("graph", "blocks", "pinned", "launches", "done")

    def __init__(self, graph, blocks, pinned, launches, done):
        self.graph, self.blocks, self.pinned, self.launches, self.done = \
            graph, blocks, pinned, launches, done


class _Entry:
    __slots__ = ("sizes", "uploads", "instances", "turn", "failed", "launch_misses")

    def __init__(self, sizes, uploads):
        self.sizes, self.uploads = sizes, uploads
        self.instances: list[_Instance] = []
        self.turn = 0
        self.failed = False
        self.launch_misses = 0


def _merge_sizes(old: list, new: list) -> list:
    """Elementwise maximum of two runs' size lists (the new one when their lengths differ:
    the run asked for other blocks, so the old sizes say nothing about it)."""
    if len(old) != len(new):
        return list(new)
    return [max(a, b) for a, b in zip(old, new)]


class GraphCache:
    """Captured graphs per region signature (see the module docstring).

    Attributes
    ----------
    stats : dict
        Counts of ``warmup``, ``capture``, ``replay``, ``fallback`` and ``eager`` runs.
    """

    def __init__(self, state, instances: int = 2, max_entries: int = 16):
        self.state, self.instances, self.max_entries = state, int(instances), int(max_entries)
        self._entries: dict = {}
        self._lock = threading.Lock()
        self.stats = {"warmup": 0, "capture": 0, "replay": 0, "fallback": 0, "eager": 0}

    # ---------------------------------------------------------------- the split
    @staticmethod
    def split(plan) -> int:
        """Index of the first step of the capturable region (``len(steps)``: none)."""
        steps = plan.steps
        i = len(steps)
        while i > 0 and capturable(steps[i - 1].node):
            i -= 1
        return i

    @staticmethod
    def signature(region, produced) -> tuple:
        """The key of a region: ops, arguments (without per-sample seeds), lanes and input
        metadata. Shapes are not in it: the blocks a graph reserves are bucketed
        (``runtime.gpu.memory.bucket``), a later batch that fits replays, one that does not runs
        eagerly and the next capture reserves the larger sizes; launches are compared anyway."""
        parts = []
        for step in region:
            n = step.node
            args = tuple(sorted((k, repr(v)) for k, v in n.args.items() if k != "_seeds"))
            ins = tuple((v.meta.dtype, v.meta.ndim, v.meta.layout, str(v.meta.device),
                         v.meta.batch_size, id(v) in produced)
                        for v in list(n.inputs) + list(n.tensor_args.values()))
            parts.append((n.op, str(n.device), step.lane, args, tuple(sorted(n.tensor_args)),
                          ins))
        return tuple(parts)

    # ---------------------------------------------------------------- running
    def run(self, plan, run_cpu_node, wrap_error) -> bool:
        """Run ``plan`` (prefix as usual, region through the cache); True when done here."""
        start = self.split(plan)
        if start == len(plan.steps):
            return False
        for step in plan.steps[:start]:
            node = step.node
            if node.device.kind == "gpu" or node.op == "transfer":
                run_gpu_node(node, wrap_error)
            else:
                run_cpu_node(node)
        region = plan.steps[start:]
        produced = {id(v) for s in region for v in s.node.outputs}
        key = self.signature(region, produced)
        with self._lock:
            entry = self._entries.get(key)
            new = entry is None
            if new:
                if len(self._entries) >= self.max_entries:
                    self._entries.pop(next(iter(self._entries)))
                entry = self._entries[key] = _Entry([], [])
        if new:
            self.stats["warmup"] += 1
            self._recorded(entry, region, wrap_error)
        elif entry.failed:
            self.stats["eager"] += 1
            self._eager(region, wrap_error)
        elif len(entry.instances) < self.instances:
            self._capture(entry, region, produced, wrap_error)
        else:
            self._replay(entry, region, produced, wrap_error)
        return True

    def _eager(self, region, wrap_error) -> None:
        for step in region:
            run_gpu_node(step.node, wrap_error)

    def _streams(self, region):
        st = self.state
        dev = region[0].node.device.index
        lanes = sorted({s.lane for s in region})
        return {lane: st.lane_stream(dev, lane) for lane in lanes}, lanes[0]

    def _recorded(self, entry, region, wrap_error) -> None:
        """Run the region eagerly, recording its block and upload sizes into ``entry`` (the
        elementwise maximum over the runs, so a later capture fits every batch seen)."""
        st = self.state
        tape = Tape(st.api, st.staging, "record")
        with st.pool.recording() as sizes:
            streams, _ = self._streams(region)
            for step in region:
                run_gpu_node(step.node, wrap_error, streams[step.lane], tape)
        entry.sizes = _merge_sizes(entry.sizes, sizes)
        entry.uploads = _merge_sizes(entry.uploads, [bucket(n) for n in tape.uploads])

    def _fallback(self, entry, region, wrap_error, exc) -> None:
        """A batch that does not fit the captured graphs: eagerly, recording its sizes; the
        graphs are dropped when sizes were the reason (the next batches recapture larger),
        capture is given up after repeated launch differences."""
        self.stats["fallback"] += 1
        if isinstance(exc, LaunchMismatch):
            entry.launch_misses += 1
            if entry.launch_misses >= 3:
                entry.failed = True
        else:
            entry.instances = []
        self._recorded(entry, region, wrap_error)

    def _wait_outside(self, region, produced, origin) -> None:
        """Make the origin stream wait for the region's inputs made outside it."""
        api = self.state.api
        for step in region:
            n = step.node
            for v in list(n.inputs) + list(n.tensor_args.values()):
                d = v.data
                if id(v) not in produced and is_device_storage(d) and d.ready is not None \
                        and d.stream is not origin:
                    api.wait_event(origin, d.ready)

    def _capture(self, entry, region, produced, wrap_error) -> None:
        st = self.state
        api = st.api
        streams, first = self._streams(region)
        origin = streams[first]
        dev = region[0].node.device.index
        blocks = st.pool.reserve(entry.sizes, dev)          # before the capture: no allocation
        pinned = [api.pinned_empty(n) for n in entry.uploads]
        self._wait_outside(region, produced, origin)
        tape = Tape(api, st.staging, "capture", pinned=pinned, blocks=blocks)
        api.begin_capture(origin)
        try:
            fork = api.record_event(origin)
            tape.events.add(id(fork))
            for s in streams.values():
                if s is not origin:
                    api.wait_event(s, fork)
            with st.pool.reserved(blocks):
                for step in region:
                    run_gpu_node(step.node, wrap_error, streams[step.lane], tape)
        except BaseException as exc:
            self._end(streams, origin)          # joined and ended: the streams stay usable
            if not isinstance(exc, CaptureMismatch):
                entry.failed = True
                raise
            self._fallback(entry, region, wrap_error, exc)
            return
        graph = self._end(streams, origin)
        inst = _Instance(graph, blocks, pinned, tape.launches, None)
        entry.instances.append(inst)
        self._launch(inst, tape, region, origin, dev)
        self.stats["capture"] += 1

    def _end(self, streams, origin):
        """Join every other lane's stream into the origin and end the capture."""
        api = self.state.api
        for s in streams.values():
            if s is not origin:
                api.wait_event(origin, api.record_event(s))
        return api.end_capture(origin)

    def _replay(self, entry, region, produced, wrap_error) -> None:
        st = self.state
        api = st.api
        inst = entry.instances[entry.turn % len(entry.instances)]
        entry.turn += 1
        if inst.done is not None:
            api.sync_event(inst.done)       # its pinned buffers may be rewritten now
        streams, first = self._streams(region)
        origin = streams[first]
        dev = region[0].node.device.index
        tape = Tape(api, st.staging, "replay", pinned=inst.pinned, launches=inst.launches,
                    blocks=inst.blocks)
        try:
            with st.pool.reserved(inst.blocks):
                for step in region:
                    run_gpu_node(step.node, wrap_error, streams[step.lane], tape)
            if not tape.finished():
                raise LaunchMismatch("the replayed run did fewer uploads or launches")
        except CaptureMismatch as exc:
            self._fallback(entry, region, wrap_error, exc)
            return
        entry.launch_misses = 0
        self._wait_outside(region, produced, origin)
        self._launch(inst, tape, region, origin, dev)
        self.stats["replay"] += 1

    def _launch(self, inst, tape, region, origin, dev) -> None:
        """Launch the instance's graph, then copy the region's results out of its blocks."""
        st = self.state
        api = st.api
        api.launch_graph(inst.graph, origin)
        blocks = {id(b.mem): b for b in inst.blocks}
        fresh: dict[int, object] = {}           # id(reserved memory) -> its copy's memory
        for step in region:
            for v in step.node.outputs:
                if not is_device_storage(v.data):
                    continue
                out = []
                for s in v.data:
                    mem = api.memory_of(s)
                    blk = blocks.get(id(mem))
                    if blk is None:             # not in the graph's blocks: stays valid
                        out.append(s)
                        continue
                    if id(mem) not in fresh:    # one copy per block, not per sample
                        new = st.pool.block(blk.nbytes, origin, dev)
                        api.copy_d2d(api.array(new.mem, 0, (blk.nbytes,), "u1"),
                                     api.array(mem, 0, (blk.nbytes,), "u1"), origin)
                        fresh[id(mem)] = new.mem
                    out.append(api.array(fresh[id(mem)], api.offset_of(s), s.shape, s.dtype))
                v.data = DeviceSamples(out, dev, origin, None, v.data.source_info)
                tape.used += out
        ev = api.record_event(origin)
        inst.done = ev
        for step in region:
            for v in step.node.outputs:
                if is_device_storage(v.data):
                    v.data.ready = ev
        st.pool.note_use(tape.used, origin, ev)
