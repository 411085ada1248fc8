"""Launch one variant of 2026-11-30-kernel-variants.py on one shape (for ncu), then print registers,
spills and a static SASS opcode histogram (cuobjdump), and write the SASS to the file given.

    ncu --clock-control none --kernel-name regex:_lse_kernel --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
        python 2026-11-30-kernel-variants-ncu.py base 131072x1000 bfloat16 16384:4096:4 sass.txt
"""
import sys, importlib, importlib.util, collections, subprocess, tempfile, re
from pathlib import Path
_spec = importlib.util.spec_from_file_location("variants", Path(__file__).resolve().parent / "2026-11-30-kernel-variants.py")
v = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(v)
import torch

name, shape, dname, pol = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
sass = len(sys.argv) > 5
pkg = v.build(name)
pkg._launch_mod = importlib.import_module(f"exp_{name}._launch")
k = importlib.import_module(f"exp_{name}._lse_kernel")
shape = tuple(int(s) for s in shape.split("x"))
x = (torch.randn(shape, device="cuda") * 4).to(v.DTYPES[dname])
tb, mbn, w = (int(s) for s in pol.split(":"))
sms = torch.cuda.get_device_properties(0).multi_processor_count
cfg = v.policy(pkg, x, tb, mbn, w, sms)
for _ in range(2):
    k._launch(x, cfg, torch.float32)
torch.cuda.synchronize()
print(name, shape, dname, cfg, flush=True)
if sass:
    for dev, caches in k._lse_kernel.device_caches.items():
        for key, ck in caches[0].items():
            print("n_regs", ck.n_regs, "n_spills", ck.n_spills, "shared", ck.metadata.shared)
            with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
                f.write(ck.asm["cubin"])
            out = subprocess.run(["cuobjdump", "--dump-sass", f.name], capture_output=True, text=True).stdout
            ops = collections.Counter()
            for line in out.splitlines():
                m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
                if m:
                    ops[m.group(2).split(".")[0]] += 1
            print("static SASS:", sum(ops.values()), dict(ops.most_common(30)))
            Path(sys.argv[5]).write_text(out)
