import sys

from radtrack.cli import main

sys.exit(main())
