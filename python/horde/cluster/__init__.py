"""Runs across processes and machines on Dask distributed (``--cluster``, docs/cluster.md).

Dask is plumbing here: it starts or finds the worker processes (``deploy``), runs one share of
the plan on each (``share``), and carries the shares' messages to this process
(``transport``). What the shares run, how the load is split, how intervals merge and what the
results mean are the Plan's and the Rust engine's (horde-engine's cluster/): another engine
could replace Dask without changing a number.

``distributed`` is imported only when a cluster is asked for: ``pip install 'horde[cluster]'``.
"""

from __future__ import annotations


class ClusterInputError(Exception):
    """A ``--cluster`` the user has to fix (exit 2): Dask missing, a scheduler that has no workers."""


def require_distributed():
    """The ``distributed`` module, or a ClusterInputError saying how to install it."""
    try:
        import distributed
    except ImportError as err:
        raise ClusterInputError(
            f"--cluster runs on Dask, which is not installed here ({err}): pip install 'horde[cluster]'"
        ) from None
    return distributed


def open_cluster(spec: str, spares: int = 0, simulation=None):
    """The machines of ``--cluster SPEC`` (``local:N``, ``ssh:...`` or ``tcp://HOST:PORT``), as
    the coordinator the engine drives (horde-py's ShareHosts), ``spares`` workers kept idle to
    replace lost ones (``local:N`` starts them in addition to its N). ``simulation``: (path,
    [(name, value), ...]), the simulation file each worker loads for the session functions
    the plan calls, or None."""
    require_distributed()
    from horde.cluster.coordinator import Coordinator
    from horde.cluster.deploy import connect

    deployment = connect(spec, spares)
    try:
        return Coordinator(deployment, spares, simulation)
    except BaseException:
        deployment.close()
        raise
