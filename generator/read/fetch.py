"""Fetching files from a published npm package, checked against the integrity hash the registry publishes.

Two things are fetched this way: the ACP schema the audit compares with, and the mermaid bundle the docs site
ships. Both pin a version and its `sha512-…` integrity; a tarball that does not hash to it is refused, so what
was reviewed once is what is used every time.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path


class FetchError(RuntimeError):
    """The package could not be fetched (no npm, no network), or it is not what was pinned."""


@dataclass(frozen=True)
class NpmPackage:
    """A pinned npm release: its name, version and published integrity (`sha512-` and base64)."""

    name: str
    version: str
    integrity: str

    @property
    def spec(self) -> str:
        """The `name@version` npm understands."""
        return f"{self.name}@{self.version}"


def integrity_of(data: bytes) -> str:
    """The npm integrity string of a tarball."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def fetch_members(package: NpmPackage, members: tuple[str, ...], *, timeout: float = 180) -> dict[str, bytes]:
    """The bytes of `members` (paths inside the tarball, such as `package/dist/x.js`) of the pinned package."""
    import subprocess  # here, not at the top: every generate imports this module for the pin, few fetch

    npm = shutil.which("npm")
    if npm is None:
        raise FetchError("npm is not installed")
    with tempfile.TemporaryDirectory(prefix="acp-npm-") as tmp:
        try:
            done = subprocess.run(
                [npm, "pack", package.spec, "--silent", "--pack-destination", tmp],
                capture_output=True,
                text=True,
                check=False,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise FetchError(f"npm pack {package.spec} timed out") from None
        tarballs = sorted(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            raise FetchError(f"npm pack {package.spec} failed: {done.stderr.strip()[-500:]}")
        data = tarballs[0].read_bytes()
    return extract_members(package, data, members)


def extract_members(package: NpmPackage, tarball: bytes, members: tuple[str, ...]) -> dict[str, bytes]:
    """Check `tarball` against the pinned integrity, then read `members` from it."""
    import tarfile  # as subprocess above

    if integrity_of(tarball) != package.integrity:
        raise FetchError(f"{package.spec} does not match its pinned integrity; not using it")
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            for member in members:
                try:
                    handle = archive.extractfile(member)
                except KeyError:
                    raise FetchError(f"{package.spec} has no {member}") from None
                if handle is None:
                    raise FetchError(f"{member} in {package.spec} is not a file")
                out[member] = handle.read()
    except tarfile.TarError as exc:
        raise FetchError(f"{package.spec} is not a readable tarball: {exc}") from None
    return out
