"""`python -m acp_v2_runtime.reference_agent`: the command line is in cli.py."""

import sys

from .cli import main

sys.exit(main())
