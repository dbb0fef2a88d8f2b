"""`python -m acp_v2_runtime.conformance [options] -- AGENT COMMAND...`: run the keyed-prompt traces;
`python -m acp_v2_runtime.conformance history [options] -- AGENT COMMAND...`: run random histories."""

import sys

from . import main

if sys.argv[1:2] == ["history"]:
    from .history import main as history_main

    sys.exit(history_main(sys.argv[2:]))
sys.exit(main())
