"""``python -m testbed.cluster``: :func:`testbed.cluster.cmd.main`."""

import sys

from testbed.cluster.cmd import main

sys.exit(main())
