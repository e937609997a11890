import sys

from side.cli import main

sys.exit(main())
