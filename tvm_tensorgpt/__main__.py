"""``python -m tvm_tensorgpt``: see tvm_tensorgpt.cli."""

import sys

from .cli import main

sys.exit(main())
