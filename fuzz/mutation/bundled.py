"""The bundled catalog as a source of mutants: each file of ``mutants/`` as a :class:`Mutant`.

    from fuzz.mutation import catalog, minimal_input
    mutants = catalog()                      # name -> Mutant, in the order of mutants.NAMES
    mutants["no_max_added"].diff()           # the one edit of the reference, as a unified diff
    mutants["no_max_added"].target           # "mutants.patched:no_max_added", what a worker loads
    minimal_input(mutants["nan_ignored"])    # the documented input that exposes the bug

A catalog mutant is the same kind of thing as an operator's (a patch of ``reference:lse``'s files),
located the same way (:func:`fuzz.mutation.sites.locate`), so it gets the same coverage, cache,
reports and ``--tests`` as any other; what it adds is a name, the check expected to kill it and
a minimal input.
"""

from __future__ import annotations

import importlib

import mutants

from .mutant import Mutant
from .patch import Patch
from .sites import Kernel, discover, from_patch

__all__ = ["REFERENCE_TARGET", "catalog", "kernel_device", "minimal_input"]

REFERENCE_TARGET = "reference:lse"
"""The kernel the catalog's patches edit."""


def catalog(kernel: Kernel | None = None) -> dict[str, Mutant]:
    """Every bundled mutant by name (``kernel``: ``discover("reference:lse")``, passed to reuse one)."""
    kernel = discover(REFERENCE_TARGET) if kernel is None else kernel
    found = {}
    for name in mutants.NAMES:
        module = importlib.import_module(f"{mutants.__name__}.{name}")
        pitfall, documented = _described(module.__doc__)
        found[name] = from_patch(kernel, name, Patch(module.PATH, module.ANCHOR, module.REPLACEMENT),
                                 pitfall=pitfall, documented=documented, expected_check=module.EXPECTED_CHECK,
                                 cpu_check=getattr(module, "CPU_CHECK", ""),
                                 target=f"{mutants.__name__}.patched:{name}", module=module.__name__)
    return found


def _described(doc: str) -> tuple[str, str]:
    """(pitfall, where it is documented) from a mutant's docstring: its first line ("Mutant: ...")
    and its "Documented:" section, on one line each (the docstring is the one place they are written)."""
    first = doc.strip().splitlines()[0].removeprefix("Mutant: ").rstrip(".")
    documented = doc.partition("\nDocumented:")[2].partition("\n\n")[0]
    return first, " ".join(documented.split())


def kernel_device():
    """Where the reference kernels run: CPU tensors in Triton's interpreter, else the CUDA device."""
    # Imported here: importing the reference package loads Triton and fixes its mode, which listing
    # the catalog must not do.
    import torch
    from reference._device import interpreting

    return torch.device("cpu") if interpreting() else torch.device("cuda")


def minimal_input(mutant: Mutant):
    """A catalog mutant's documented input that exposes its bug, on the device the kernels run on."""
    return importlib.import_module(mutant.module).minimal_input(kernel_device())
