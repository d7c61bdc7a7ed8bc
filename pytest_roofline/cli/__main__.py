"""``python -m pytest_roofline.cli``."""

import sys

from pytest_roofline.cli import main

sys.exit(main())
