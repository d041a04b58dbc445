"""`prefduel.runner.dask_futures` without a cluster: its names are re-exported by
`prefduel.runner.distributed`, and a shut-down executor takes no new work."""

from __future__ import annotations

import pytest

from prefduel.core.errors import PrefduelError
from prefduel.runner import dask_futures, distributed


def test_distributed_re_exports_the_executor_and_its_error():
    assert distributed.DaskExecutor is dask_futures.DaskExecutor
    assert distributed.ClusterError is dask_futures.ClusterError
    assert issubclass(dask_futures.ClusterError, PrefduelError)


def test_a_shut_down_executor_refuses_new_work_before_touching_the_client():
    executor = dask_futures.DaskExecutor(client=None, address="tcp://nowhere:1")
    executor.shutdown(wait=True)
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(print, "never")
