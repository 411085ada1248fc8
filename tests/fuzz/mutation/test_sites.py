"""Locating mutants in a kernel's files (fuzz.mutation.sites): what it costs."""

from __future__ import annotations


def test_the_catalog_parses_each_file_of_the_kernel_once_however_often_it_is_built(monkeypatch):
    # Each bundled mutant is located in the syntax tree of the file it patches; parsing that file
    # once per mutant (0.3 s each, 25 mutants) had made the catalog cost 7 s, and the test suite's
    # collection builds it several times in each worker (0.9 s of parsing each time, once per build).
    import libcst

    import fuzz.mutation.sites as sites
    from fuzz.mutation.bundled import catalog

    parsed = []
    real = libcst.parse_module
    monkeypatch.setattr(sites.cst, "parse_module", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    sites._parsed.cache_clear()
    sites._module.cache_clear()
    first = catalog()
    files = next(iter(first.values())).sources  # every file of the kernel: discover() reads each once
    assert sorted(parsed) == sorted(files.values())  # each once: not once per mutant, nor again to locate them
    again = catalog()
    assert len(parsed) == len(files)  # nothing parsed again
    assert {name: (m.function, m.kernel, m.statement, m.guards) for name, m in again.items()} == \
        {name: (m.function, m.kernel, m.statement, m.guards) for name, m in first.items()}
