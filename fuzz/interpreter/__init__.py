"""What Triton does under the fuzzer: its interpreter made to compile, compute and specialize as a GPU
does, autotuned kernels pinned config by config, and what the CPU cannot run refused by name.

* :mod:`.repairs` installs every correction of the interpreter, in order (:func:`.repairs.install`);
* :mod:`.bfloat16`, :mod:`.constants`, :mod:`.numpy_compat`, :mod:`.pace`, :mod:`.frontend`, :mod:`.libdevice`,
  :mod:`.kernel_globals`, :mod:`.unsupported`: one correction each;
* :mod:`.emulation`: the errors of the emulator, never the kernel's fault;
* :mod:`.specialization`: what Triton would compile, counted without a GPU;
* :mod:`.autotune`: every config of an autotuned kernel exercised, none benchmarked.

Nothing is imported here: a module below pays only for what it uses.
"""
