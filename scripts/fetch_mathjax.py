"""Fetch MathJax 3.2.2 from the npm registry, check its hash, and unpack its es5 bundle.

The book serves MathJax from its own site so that math renders with no outside host. The tarball
comes from `npm pack mathjax@3.2.2` (the registry's ordinary client) and must match the pinned
sha512 (the registry's `dist.integrity`) before anything is extracted. Only `es5/` and the
licence are kept, minus the other combined bundles and the CHTML output (about 11 MB is left):
`tex-svg-full.js` is the entry point (`mathjax_path` in book/_config.yml); the rest is there for
components MathJax loads lazily from its own folder (menu, accessibility, speech rules).

Usage: python scripts/fetch_mathjax.py DEST_DIR   (for example book/_extra/mathjax)
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "mathjax@3.2.2"
TARBALL = "mathjax-3.2.2.tgz"
SHA512 = "Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="
SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
ENTRY = "tex-svg-full.js"
#: Top-level files kept besides the entry point; other top-level bundles are left out.
TOP_LEVEL = {"LICENSE", ENTRY, "core.js", "loader.js", "startup.js"}


def wanted(name: str) -> bool:
    """Whether a path inside the package (without `package/`) is kept, e.g. es5/ui/menu.js."""
    if name == "LICENSE":
        return True
    if not name.startswith("es5/"):
        return False
    inner = name.removeprefix("es5/")
    if "/" not in inner:
        return inner in TOP_LEVEL
    return not inner.startswith("output/chtml")


def npm_pack(workdir: Path) -> Path:
    """Download the package tarball into `workdir` with `npm pack`."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is required to fetch MathJax (apt-get install npm, or install Node.js)")
    subprocess.run(
        [npm, "pack", PACKAGE, "--pack-destination", str(workdir), "--silent"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    tarball = workdir / TARBALL
    if not tarball.is_file():
        raise SystemExit(f"npm pack did not produce {tarball}")
    return tarball


def verify(tarball: Path) -> None:
    """Raise SystemExit unless the tarball matches both pinned hashes."""
    data = tarball.read_bytes()
    sha512 = base64.b64encode(hashlib.sha512(data).digest()).decode()
    sha256 = hashlib.sha256(data).hexdigest()
    if sha512 != SHA512 or sha256 != SHA256:
        raise SystemExit(
            f"{tarball.name}: hash mismatch\n  sha512 {sha512} (expected {SHA512})\n"
            f"  sha256 {sha256} (expected {SHA256})"
        )


def extract(tarball: Path, dest: Path) -> int:
    """Unpack package/es5/* and package/LICENSE into `dest`; return the number of files."""
    count = 0
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            if not member.isfile() or not wanted(name):
                continue
            target = dest / name.removeprefix("es5/")
            if ".." in Path(name).parts:
                raise SystemExit(f"refusing a path outside the destination: {member.name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
            count += 1
    return count


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    dest = Path(argv[0])
    with tempfile.TemporaryDirectory() as tmp:
        tarball = npm_pack(Path(tmp))
        verify(tarball)
        staging = Path(tmp) / "mathjax"
        count = extract(tarball, staging)
        if not (staging / ENTRY).is_file():
            raise SystemExit(f"{ENTRY} is missing from {PACKAGE}")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, dest)
    print(f"MathJax: {count} files from {PACKAGE} (sha512 verified) -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
