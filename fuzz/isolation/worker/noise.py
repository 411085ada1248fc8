"""What a worker printed: :class:`Noise`, reported beside a verdict (a candidate that prints is noisy, not wrong)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Noise"]


@dataclass(frozen=True)
class Noise:
    """What the worker printed: byte counts and the first lines of each stream."""

    stdout_bytes: int
    stderr_bytes: int
    stdout_head: str
    stderr_head: str

    @classmethod
    def read(cls, stdout: Path, stderr: Path, *, head: int = 2000) -> Noise:
        """What a worker whose streams went to the files ``stdout`` and ``stderr`` printed so far."""
        sizes, heads = [], []
        for path in (stdout, stderr):
            try:
                sizes.append(path.stat().st_size)
                with open(path, "rb") as f:
                    heads.append(f.read(head).decode(errors="replace"))
            except OSError:
                sizes.append(0)
                heads.append("")
        return cls(sizes[0], sizes[1], heads[0], heads[1])

    @property
    def any(self) -> bool:
        return bool(self.stdout_bytes or self.stderr_bytes)

    def describe(self) -> str:
        parts = []
        for name, size, head in (("stdout", self.stdout_bytes, self.stdout_head),
                                 ("stderr", self.stderr_bytes, self.stderr_head)):
            if size:
                first = head.strip().splitlines()[0][:120] if head.strip() else ""
                parts.append(f"{size} bytes to {name}" + (f" (first line: {first!r})" if first else ""))
        return "; ".join(parts) if parts else "nothing"

    def to_dict(self) -> dict[str, object]:
        return {"stdout_bytes": self.stdout_bytes, "stderr_bytes": self.stderr_bytes,
                "stdout_head": self.stdout_head, "stderr_head": self.stderr_head}
