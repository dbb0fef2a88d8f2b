"""ACP's published schemas: the npm releases this project reads, pinned with their integrity, and their fetch.

The audit compares the spec with the newest pinned release, `make compat` takes its stable file as the baseline
before our first release, the diff's release tests compare consecutive ones, and the docs name the pin; all of them
read it here, so the version is written once.
"""

from __future__ import annotations

from pathlib import Path

from .fetch import FetchError, NpmPackage, fetch_members

# The releases of the published package this project reads, each with the integrity the registry publishes for it:
# the audit compares with the newest; the diff's release tests compare consecutive ones.
UPSTREAM_NAME = "@agentclientprotocol/sdk"
UPSTREAM_RELEASES = {
    "2.2.0": "sha512-o1+eDQVb05yzPY+5v54awHyONU1oeLsbLVavkwrMQaZDuJDh/38pQiXJS4ix4d6QA3Y4bU0lHFRjwg99KKKSaQ==",
    "2.3.0": "sha512-wXsrPv3VDlff2jmant/5VxkwtYwfVdMbTXywUEztpNkTZFMgyN+wWgcor8uzJkM23+zS3j5GoOS6w03BpskB9Q==",
    # the newest release that ships schema/v2/schema.unstable.json when this was written
    "2.4.0": "sha512-7qJ8nnyj7WesC5ve185ioTpB2/svQoeGV4HA4nLEhgDUrcmBe54/08VcXc/oL4p14tDbxxECZzdYmUYQ+4l+Wg==",
}
UPSTREAM = NpmPackage(UPSTREAM_NAME, "2.4.0", UPSTREAM_RELEASES["2.4.0"])
UPSTREAM_PACKAGE, UPSTREAM_VERSION = UPSTREAM.name, UPSTREAM.version
UNSTABLE_MEMBER = "package/schema/v2/schema.unstable.json"
STABLE_MEMBER = "package/schema/v2/schema.json"


def fetch_upstream(dest: Path, version: str = UPSTREAM.version) -> tuple[Path, Path]:
    """Fetch a pinned release's schemas into `dest`; return the paths of the unstable and the stable one."""
    if version not in UPSTREAM_RELEASES:
        raise FetchError(f"{UPSTREAM_NAME}@{version} has no pinned integrity in generator/read/published.py")
    found = fetch_members(
        NpmPackage(UPSTREAM_NAME, version, UPSTREAM_RELEASES[version]), (UNSTABLE_MEMBER, STABLE_MEMBER)
    )
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for member in (UNSTABLE_MEMBER, STABLE_MEMBER):
        path = dest / Path(member).name
        path.write_bytes(found[member])
        out.append(path)
    return out[0], out[1]
