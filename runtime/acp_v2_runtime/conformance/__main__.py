"""`python -m acp_v2_runtime.conformance [options] -- AGENT COMMAND...`: run the keyed-prompt traces."""

import sys

from . import main

sys.exit(main())
