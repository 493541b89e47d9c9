"""Where the lab's tasks run, from the CLI's --scheduler and --workers."""
import pytest

from npkit.bench.lab.errors import LabConfigError
from npkit.bench.lab.sweep import Where


@pytest.mark.parametrize(("scheduler", "workers", "expected"), [
    (None, None, Where("serial", 2)),
    (None, 1, Where("serial", 1)),
    (None, 3, Where("local", 3)),          # workers asked for alone: a LocalCluster
    ("serial", 4, Where("serial", 4)),
    ("local", None, Where("local", 2)),
    ("local", 1, Where("local", 1)),
    ("tcp://h:8786", None, Where("address", 2, "tcp://h:8786")),
])
def test_parse(scheduler: str | None, workers: int | None, expected: Where) -> None:
    assert Where.parse(scheduler, workers) == expected


def test_zero_workers_is_refused() -> None:
    with pytest.raises(LabConfigError, match="workers must be >= 1"):
        Where.parse("local", 0)
