import sys

from ptxpy.cli import main

sys.exit(main())
