"""``python -m wave_actors``: the ``wave-actors`` command."""

import sys

from wave_actors._cli import main

sys.exit(main())
