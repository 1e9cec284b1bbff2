"""The explorer's panels: the server side of the browser views that need the model.

This is the one list of them, in page order (below the viewer). A panel is a
:class:`~explorer.panels.base.Panel` subclass whose ``view`` names its JS module in
``explorer/web/views.js``; adding one means its two files and a line on each list.
"""

from .analysis import AnalysisPanel
from .arithmetic import ArithmeticPanel
from .attribution import AttributionPanel
from .beam import BeamPanel
from .epochs import EpochPanel
from .glance import GlancePanel
from .lens import LensPanel
from .pairs import PairsPanel
from .sources import SourcesPanel
from .value_zeroing import ValueZeroingPanel
from .whatif import WhatIfPanel

PANELS = (
    ArithmeticPanel,
    WhatIfPanel,
    AnalysisPanel,
    AttributionPanel,
    SourcesPanel,
    ValueZeroingPanel,  # beside the contributions it can be compared with
    BeamPanel,
    EpochPanel,
    PairsPanel,
    GlancePanel,
    LensPanel,  # hidden: the logit lens of a large vocabulary, when its section opens
)

__all__ = [
    "PANELS",
    "ArithmeticPanel",
    "WhatIfPanel",
    "AnalysisPanel",
    "AttributionPanel",
    "SourcesPanel",
    "ValueZeroingPanel",
    "BeamPanel",
    "EpochPanel",
    "PairsPanel",
    "GlancePanel",
    "LensPanel",
]
