"""``python -m radtrack.frontend``."""

import sys

from radtrack.frontend.app import main

sys.exit(main())
