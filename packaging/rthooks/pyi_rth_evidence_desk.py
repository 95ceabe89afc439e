"""Runtime hook: runs inside the frozen bundle before any project or litellm code.

litellm fetches its model price and context-window map from the network at import time unless
told to use the copy it ships; a desk that may run with no network (and a smoke check that must)
needs the local map. ``setdefault`` keeps a user's explicit choice.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
