"""The npm fetch helper refuses a tarball that is not the pinned one, and reads members from the one that is."""

from __future__ import annotations

import io
import tarfile

import pytest

from generator.read.fetch import FetchError, NpmPackage, extract_members, integrity_of


def _tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_members_of_the_pinned_tarball_are_read() -> None:
    data = _tarball({"package/a.json": b"{}", "package/b.js": b"x"})
    package = NpmPackage("thing", "1.0.0", integrity_of(data))
    assert extract_members(package, data, ("package/b.js",)) == {"package/b.js": b"x"}


def test_a_tarball_with_another_hash_is_refused() -> None:
    data = _tarball({"package/a.json": b"{}"})
    package = NpmPackage("thing", "1.0.0", integrity_of(data + b"!"))
    with pytest.raises(FetchError, match="integrity"):
        extract_members(package, data, ("package/a.json",))


def test_a_missing_member_is_a_fetch_error() -> None:
    data = _tarball({"package/a.json": b"{}"})
    with pytest.raises(FetchError, match="has no package/missing"):
        extract_members(NpmPackage("thing", "1.0.0", integrity_of(data)), data, ("package/missing",))


def test_bytes_that_are_no_tarball_are_a_fetch_error() -> None:
    data = b"not a tarball"
    with pytest.raises(FetchError, match="not a readable tarball"):
        extract_members(NpmPackage("thing", "1.0.0", integrity_of(data)), data, ("package/a.json",))
