"""Side: citation verification for Wikipedia.

Find citations that probably do not support their claim, and suggest a better source
(after Petroni et al. 2022). The library is importable with no server running; the bot,
workers and web service depend on it, never the other way round.
"""

from side.claims import Citation, Claim
from side.config import Config, load_config
from side.errors import SideError

__all__ = ["Citation", "Claim", "Config", "SideError", "load_config"]
__version__ = "0.1.0"
