"""Make the test doubles importable as ``doubles`` whatever pytest's import mode is."""

import os
import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# Under pytest-xdist every worker would start one torch thread per core: on a small machine the
# workers then fight over the cores and run several times slower than one thread each.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)
