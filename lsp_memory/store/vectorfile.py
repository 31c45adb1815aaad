"""The vector file: one store's embedded documents' vectors in a single file that every
process maps instead of loading.

Loading 117k float32 vectors out of the SQLite vector cache took every process 1.35 s and
173 MiB at start (docs/benchmarks.md, "Embeddings and exact vector search"). This file holds
the same vectors twice, laid out for the two things a search does with them:

- an int8 copy (each row scaled by its own largest magnitude), memory-mapped and scanned whole
  by a SIMD int8 dot product: 45 MiB at 117k rows, shared between processes through the page
  cache and loaded page by page on first use;
- the exact float32 rows, never mapped (a mapped row brings a whole large folio of the file
  into the process's resident memory): the few candidates a scan keeps are read with
  ``pread`` and rescored exactly, so every cosine a caller sees is the float32 one.

Beside them: each row's doc id, user, kind and status, and what says whether the file is
current (the embedding queue's token and generation, ``store.catalog``). The layout, all
little-endian, each section 64-byte aligned:

    magic "LMVF0001" | u64 header length | JSON header | int8 rows | float32 row scales
    | float32 rows | int32 user, kind and status codes | int64 offsets of the doc ids
    | int32 rows in the order of their doc ids | doc ids, UTF-8, end to end

A file is written whole to a temporary name and renamed over the old one: a process that
mapped the old file keeps reading it (the rename never changes its inode) until it maps the
new one. The cache folder is not trusted (``cachefiles``): the file is opened without
following links and read only when a regular file of this user; a file whose size is not the
one its header implies (truncated), whose header does not parse, or that belongs to another
model is ``Unusable`` and rebuilt by the caller.
"""

from __future__ import annotations

import bisect
import json
import mmap
import os
import struct
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lsp_memory.cachefiles import Distrusted, open_trusted

MAGIC = b"LMVF0001"
_ALIGN = 64
_HEADER_LIMIT = 1 << 20
_BLOCK = 8192  # rows read or written at a time: 12 MiB of float32
ROWS_KEPT = 8192
"""Rows of doc ids kept by ``VectorFile.row_of`` (~1.5 MB at most)."""


class Unusable(Exception):
    """A vector file that cannot be used as it is; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a vector file was written from: the model, and the embedding queue's token and
    generation at the time (see ``store.catalog``)."""

    model_id: str
    dim: int
    token: str
    generation: int


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


@dataclass(frozen=True, slots=True)
class _Layout:
    count: int
    dim: int
    ids_bytes: int
    start: int  # where the int8 rows begin

    @property
    def quant(self) -> int:
        return self.start

    @property
    def scales(self) -> int:
        return _aligned(self.quant + self.count * self.dim)

    @property
    def exact(self) -> int:
        return _aligned(self.scales + 4 * self.count)

    @property
    def codes(self) -> int:
        return _aligned(self.exact + 4 * self.count * self.dim)

    @property
    def offsets(self) -> int:
        return _aligned(self.codes + 12 * self.count)

    @property
    def order(self) -> int:
        return _aligned(self.offsets + 8 * (self.count + 1))

    @property
    def ids(self) -> int:
        return _aligned(self.order + 4 * self.count)

    @property
    def size(self) -> int:
        return self.ids + self.ids_bytes


def quantize(rows: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Rows as int8 with a scale each: ``row ≈ scale · int8 row``."""
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows), np.float32)
    scales = np.where(peak > 0, peak / 127, 1.0).astype(np.float32)
    quant = np.rint(rows / scales[:, None]).clip(-127, 127).astype(np.int8)
    return quant, scales


def write(
    path: Path,
    stamp: Stamp,
    *,
    ids: Sequence[str],
    names: tuple[Sequence[str], Sequence[str], Sequence[str]],
    codes: npt.NDArray[np.int32],
    blocks: Iterable[npt.NDArray[np.float32]],
) -> None:
    """Write a vector file at ``path`` (temporary file, then rename): row ``i`` is doc
    ``ids[i]`` with user, kind and status ``names[c][codes[i, c]]``; ``blocks`` give the
    unit float32 rows in order, a block at a time."""
    count, dim = len(ids), stamp.dim
    encoded = [doc_id.encode("utf-8") for doc_id in ids]
    blob = b"".join(encoded)
    offsets = np.zeros(count + 1, dtype="<i8")
    np.cumsum([len(one) for one in encoded], out=offsets[1:])
    order = np.array(sorted(range(count), key=encoded.__getitem__), dtype="<i4")
    header = json.dumps(
        {
            "model": stamp.model_id,
            "dim": dim,
            "token": stamp.token,
            "generation": stamp.generation,
            "count": count,
            "ids_bytes": len(blob),
            "users": list(names[0]),
            "kinds": list(names[1]),
            "statuses": list(names[2]),
        }
    ).encode("utf-8")
    layout = _Layout(count, dim, len(blob), _aligned(len(MAGIC) + 8 + len(header)))
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        os.pwrite(handle, MAGIC + struct.pack("<Q", len(header)) + header, 0)
        row = 0
        for given in blocks:
            block = np.ascontiguousarray(given, dtype="<f4")
            quant, scales = quantize(block)
            os.pwrite(handle, quant.tobytes(), layout.quant + row * dim)
            os.pwrite(handle, scales.tobytes(), layout.scales + row * 4)
            os.pwrite(handle, block.tobytes(), layout.exact + row * dim * 4)
            row += len(block)
        if row != count:
            raise ValueError(f"{row} vectors for {count} documents")
        os.pwrite(handle, np.ascontiguousarray(codes.T, dtype="<i4").tobytes(), layout.codes)
        os.pwrite(handle, offsets.tobytes(), layout.offsets)
        os.pwrite(handle, order.tobytes(), layout.order)
        os.pwrite(handle, blob, layout.ids)
        os.ftruncate(handle, layout.size)
        os.fsync(handle)
        os.close(handle)
        handle = -1
        Path(name).replace(path)
    except BaseException:
        if handle >= 0:
            os.close(handle)
        Path(name).unlink(missing_ok=True)
        raise


class VectorFile:
    """A vector file opened for reading: the int8 rows and the codes mapped, the float32
    rows read on demand. Valid for the life of the object, whatever happens to the path."""

    def __init__(self, path: Path, model_id: str, dim: int) -> None:
        """Open and check the file at ``path`` for vectors of ``model_id``; ``Unusable``
        when it may not or cannot be used, ``FileNotFoundError`` when there is none."""
        try:
            self._fd = open_trusted(path)
        except Distrusted as error:
            raise Unusable(str(error)) from None
        try:
            self._open(path, model_id, dim)
        except BaseException:
            os.close(self._fd)
            raise

    def _open(self, path: Path, model_id: str, dim: int) -> None:
        size = os.fstat(self._fd).st_size
        head = os.pread(self._fd, len(MAGIC) + 8, 0)
        if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
            raise Unusable(f"{path} is not a vector file of this version")
        (length,) = struct.unpack("<Q", head[len(MAGIC) :])
        if length > min(_HEADER_LIMIT, size):
            raise Unusable(f"{path} is truncated or damaged")
        try:
            header: dict[str, Any] = json.loads(os.pread(self._fd, length, len(head)))
            count, ids_bytes = int(header["count"]), int(header["ids_bytes"])
            self.stamp = Stamp(
                str(header["model"]),
                int(header["dim"]),
                str(header["token"]),
                int(header["generation"]),
            )
            self.names = tuple(
                [str(name) for name in header[key]] for key in ("users", "kinds", "statuses")
            )
        except (ValueError, KeyError, TypeError) as error:
            raise Unusable(f"{path} has a damaged header ({error})") from None
        if (self.stamp.model_id, self.stamp.dim) != (model_id, dim):
            raise Unusable(f"{path} holds vectors of another model ({self.stamp.model_id})")
        layout = _Layout(count, dim, ids_bytes, _aligned(len(head) + length))
        if count < 0 or ids_bytes < 0 or size != layout.size:
            raise Unusable(f"{path} is truncated ({size:,} bytes of {layout.size:,})")
        self.path, self.count, self.dim, self._layout = path, count, dim, layout
        self._hashes: npt.NDArray[np.int64] | None = None  # see hash_ids
        self._hash_rows = np.zeros(0, dtype=np.int32)
        self._kept: dict[str, int | None] = {}
        if count == 0:
            self.quant = np.zeros((0, dim), dtype=np.int8)
            self.scales = np.zeros(0, dtype=np.float32)
            self.codes = np.zeros((3, 0), dtype=np.int32)
            self._offsets = np.zeros(1, dtype=np.int64)
            self._order = np.zeros(0, dtype=np.int32)
            self._blob = memoryview(b"")
            return
        self._map = mmap.mmap(self._fd, size, access=mmap.ACCESS_READ)
        mapped = np.frombuffer(self._map, np.uint8)
        self.quant = (
            mapped[layout.quant : layout.quant + count * dim].view(np.int8).reshape(count, dim)
        )
        self.scales = mapped[layout.scales : layout.scales + 4 * count].view("<f4")
        self.codes = mapped[layout.codes : layout.codes + 12 * count].view("<i4").reshape(3, count)
        self._offsets = mapped[layout.offsets : layout.offsets + 8 * (count + 1)].view("<i8")
        self._order = mapped[layout.order : layout.order + 4 * count].view("<i4")
        self._blob = memoryview(self._map)[layout.ids : layout.ids + ids_bytes]
        for column, names in zip(self.codes, self.names, strict=True):
            if count and (int(column.min()) < 0 or int(column.max()) >= len(names)):
                raise Unusable(f"{path} is damaged (a code with no name)")
        steps = np.diff(self._offsets)
        if self._offsets[0] != 0 or self._offsets[-1] != ids_bytes or (steps < 0).any():
            raise Unusable(f"{path} is damaged (its ids do not add up)")
        if int(self._order.min()) < 0 or int(self._order.max()) >= count:
            raise Unusable(f"{path} is damaged (its id order names no row)")

    def release_quant(self) -> None:
        """Take the int8 rows' pages out of this process's resident memory (they stay in
        the page cache, and are read again if used): for a caller that copied them."""
        if self.count:
            end = self._layout.scales - self._layout.scales % mmap.PAGESIZE
            self._map.madvise(mmap.MADV_DONTNEED, 0, end)

    def _id_bytes(self, row: int) -> bytes:
        return bytes(self._blob[self._offsets[row] : self._offsets[row + 1]])

    def ids_of(self, rows: Iterable[int]) -> list[str]:
        """The doc ids of ``rows`` (only those are decoded: a search needs its results')."""
        try:
            return [self._id_bytes(row).decode("utf-8") for row in rows]
        except UnicodeDecodeError as error:
            raise Unusable(f"{self.path} is damaged ({error})") from None

    @cached_property
    def ids(self) -> list[str]:
        """Every row's doc id, decoded on first use (~60 ms at 117k rows)."""
        return self.ids_of(range(self.count))

    def hash_ids(self) -> None:
        """Hash every row's doc id once, for ``row_of`` to look ids up by hash from then on:
        for a process that looks up many over its life (a server: ~125 a search), where
        bisection cost ~12 µs a lookup at 207k rows. This process's own string hash, kept
        as a sorted int64 array and the rows in that order (2.4 MiB at 207k rows, where a
        dictionary of the ids would hold ~25 MiB); built in ~0.1 s."""
        if self._hashes is not None:
            return
        offsets, blob = self._offsets.tolist(), self._blob
        hashes = np.fromiter(
            (hash(blob[offsets[row] : offsets[row + 1]]) for row in range(self.count)),
            np.int64,
            self.count,
        )
        order = np.argsort(hashes, kind="stable")
        self._hash_rows = order.astype(np.int32)
        self._hashes = hashes[order]

    @property
    def hashed(self) -> bool:
        """Whether ``hash_ids`` was called: ``rows_of`` then looks ids up together."""
        return self._hashes is not None

    def rows_of(self, doc_ids: Sequence[str]) -> list[int | None]:
        """``row_of`` of each of ``doc_ids``: once the ids are hashed, their hashes are
        looked up together (one ``searchsorted``, ~125 ids of a search in ~0.2 ms where one
        at a time took ~2 ms); an id whose hash another shares is looked up alone."""
        hashes = self._hashes
        if hashes is None or not doc_ids or not self.count:
            return [self.row_of(doc_id) for doc_id in doc_ids]
        wanted = [doc_id.encode("utf-8") for doc_id in doc_ids]
        codes = np.fromiter((hash(one) for one in wanted), np.int64, len(wanted))
        at = np.minimum(np.searchsorted(hashes, codes), self.count - 1)
        rows = self._hash_rows[at].tolist()
        found: list[int | None] = []
        for doc_id, one, row, same in zip(
            doc_ids, wanted, rows, (hashes[at] == codes).tolist(), strict=True
        ):
            if not same:
                found.append(None)
            elif self._id_bytes(row) == one:
                found.append(row)
            else:  # another id with the same hash comes first
                found.append(self._row_of(doc_id))
        return found

    def row_of(self, doc_id: str) -> int | None:
        """The row of ``doc_id``, kept for the ``ROWS_KEPT`` ids asked last: a warm
        server's context block asks the rows of the same ~600 search candidates after every
        edit of a prompt (~10 ms of bisection each time). The file never changes under this
        object, so a kept row stays true. Found by its hash once ``hash_ids`` was called,
        else by bisection in the ids' sorted order (17 ids read at 117k rows, where a
        dictionary of them all takes ~150 ms to build)."""
        kept = self._kept
        if doc_id in kept:
            return kept[doc_id]
        if len(kept) >= ROWS_KEPT:
            kept.clear()  # the next prompt's candidates are kept anew
        row = kept[doc_id] = self._row_of(doc_id)
        return row

    def _row_of(self, doc_id: str) -> int | None:
        wanted = doc_id.encode("utf-8")
        if self._hashes is not None:
            hashes, code = self._hashes, hash(wanted)
            at = int(np.searchsorted(hashes, code))
            while at < self.count and hashes[at] == code:  # equal hashes: compare the ids
                row = int(self._hash_rows[at])
                if self._id_bytes(row) == wanted:
                    return row
                at += 1
            return None
        order = self._order
        at = bisect.bisect_left(
            range(self.count), wanted, key=lambda i: self._id_bytes(int(order[i]))
        )
        if at < self.count and self._id_bytes(order[at]) == wanted:
            return int(order[at])
        return None

    def exact(
        self, rows: npt.NDArray[np.intp], *, out: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[np.float32]:
        """The float32 rows ``rows`` (in that order), read from the file into ``out`` (a new
        array when None): row by row for a few, a block at a time for many."""
        dim, start = self.dim, self._layout.exact
        width = 4 * dim
        if out is None:
            out = np.empty((len(rows), dim), dtype=np.float32)
        touched = np.unique(rows // _BLOCK).size * _BLOCK  # rows read a block at a time
        if touched > 32 * len(rows) and out.flags.c_contiguous:  # sparse: a read per row
            # Each straight into its place in ``out``: ~2 µs a row less than ``pread`` and
            # a copy (a search reads ~500).
            into = out.data.cast("B")
            for at, row in enumerate(rows.tolist()):
                if (
                    os.preadv(self._fd, [into[at * width : (at + 1) * width]], start + row * width)
                    != width
                ):
                    raise Unusable(f"{self.path} was truncated while in use")
            return out
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        for first in range(0, self.count, _BLOCK):
            lo, hi = np.searchsorted(ordered, [first, first + _BLOCK])
            if lo == hi:
                continue
            last = min(self.count, first + _BLOCK)
            data = os.pread(self._fd, (last - first) * width, start + first * width)
            block = np.frombuffer(data, "<f4").reshape(last - first, dim)
            out[order[lo:hi]] = block[ordered[lo:hi] - first]
        return out

    def blocks(self, rows: npt.NDArray[np.intp]) -> Iterable[npt.NDArray[np.float32]]:
        """The float32 rows ``rows`` (ascending), a block at a time (for a rewrite)."""
        for start in range(0, len(rows), _BLOCK):
            yield self.exact(rows[start : start + _BLOCK])

    def close(self) -> None:
        """Give the file back (the mapping goes with the last reference to its arrays)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
