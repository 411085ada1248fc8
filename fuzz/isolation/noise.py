"""What a worker printed: :class:`Noise`, reported beside a verdict (a candidate that prints is noisy, not wrong)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Noise"]


@dataclass(frozen=True)
class Noise:
    """What the worker printed: byte counts and the first lines of each stream."""

    stdout_bytes: int
    stderr_bytes: int
    stdout_head: str
    stderr_head: str

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
