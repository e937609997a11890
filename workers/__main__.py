"""``python -m workers``: the same as ``side-worker``."""

import sys

from workers.worker import main

sys.exit(main())
