"""``python -m testbed.cluster``: :func:`testbed.cluster.cmd.main`."""

from testbed.cluster.cmd import main
from tools import cli

cli.run(main, "cluster")
