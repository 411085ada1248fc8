"""Shared by every test directory: the planted implementations are importable, one torch thread each.

``tests/implementations`` holds everything the tests plant: ``doubles`` (small implementations,
correct ones and one broken per check), ``candidates`` (files for ``check`` and ``grade``),
``mutants`` (planted mutants with known statuses), ``correct`` (the false-alarm corpus) and
``tuned`` (autotuned kernels). It is put on ``sys.path`` so that ``import doubles`` and targets like
``candidates.torch_float64:lse`` resolve whatever pytest's import mode is.
"""

import os
import sys
from pathlib import Path

IMPLEMENTATIONS = Path(__file__).parent / "implementations"
if str(IMPLEMENTATIONS) not in sys.path:
    sys.path.insert(0, str(IMPLEMENTATIONS))

# Under pytest-xdist every worker would start one torch thread per core: on a small machine the
# workers then fight over the cores and run several times slower than one thread each.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)
