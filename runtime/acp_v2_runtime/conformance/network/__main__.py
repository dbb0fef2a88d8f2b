"""python -m acp_v2_runtime.conformance.network --listen HOST:PORT --upstream URL [--hold-limit SECONDS]

Serves the fault proxy until interrupted; arm faults through its control knob (see `app`). `--list` prints each
fault, the profiles it applies to and what it does.
"""

from __future__ import annotations

import argparse
import sys

from ...remote.serve import bind, url_of
from .app import CONTROL, DEFAULT_HOLD_LIMIT, FaultProxy
from .faults import APPLIES_TO, MEANING
from .serve import server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_v2_runtime.conformance.network", description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to serve on (port 0: a free one)")
    parser.add_argument("--upstream", help="the ACP endpoint to forward to, http://HOST:PORT/PATH")
    parser.add_argument("--hold-limit", type=float, default=DEFAULT_HOLD_LIMIT, help="seconds a held POST waits")
    parser.add_argument("--list", action="store_true", help="print the faults and exit")
    options = parser.parse_args(argv)
    if options.list:
        for fault, meaning in MEANING.items():
            print(f"{fault.value} ({', '.join(APPLIES_TO[fault])}): {meaning}")
        return 0
    if not options.upstream:
        parser.error("--upstream is required")
    host, _, port = options.listen.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--listen takes HOST:PORT, not {options.listen!r}")
    sock = bind(host.strip("[]"), int(port))
    print(f"fault proxy on {url_of(sock)} -> {options.upstream} (control: {CONTROL}/)", flush=True)
    server(FaultProxy(options.upstream, hold_limit=options.hold_limit)).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
