"""What the timing benchmarks share: the sentence they time, and the median of repeated calls."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

SENTENCE = "My sister bought a beautiful red dress for the party."  # 10 words


def median_ms(fn: Callable[[], object], repeat: int, digits: int = 2) -> float:
    """The median wall time of ``repeat`` calls of ``fn``, in milliseconds, after one call
    that is not timed (the first one pays for lazy set-up and cold caches)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), digits)
