"""``ndd.compile.report()``: what the last compiled loop on this thread did."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Report:
    """What the last compiled loop did (``ndd.compile.report()``)."""

    traced: int = 0
    replayed: int = 0
    fallbacks: dict = field(default_factory=dict)   # (callsite, reason) -> count
    plan_text: str = ""
    respeculated: int = 0   # times the seeds drawn ahead were given back and prefetched again

    def __str__(self):
        lines = [f"compiled loop: {self.traced} traced calls, {self.replayed} replayed calls"]
        if self.respeculated:
            lines.append(f"  random seeds drawn ahead given back {self.respeculated}x (the "
                         f"body's random calls differed from the trace); prefetched again")
        for (site, reason), n in sorted(self.fallbacks.items()):
            lines.append(f"  not replayed x{n}: {site}: {reason}")
        if self.plan_text:
            lines += ["", self.plan_text]
        return "\n".join(lines)


_last_report = threading.local()


def report() -> Report | None:
    """The report of the last compiled loop run on this thread."""
    return getattr(_last_report, "report", None)


def start_report() -> Report:
    """A new, empty report: the one :func:`report` gives on this thread from now on."""
    rep = _last_report.report = Report()
    return rep
