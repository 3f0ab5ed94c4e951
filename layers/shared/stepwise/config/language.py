"""The languages Stepwise speaks to a model, in a module of its own: the prompts, parsers and steps that need
only this name then do not load the configuration's models (`stepwise.config.model`) at import."""

from typing import Literal

# The language of the words Stepwise itself says to the model: format instructions, corrective
# observations, the final-round order and the intent prompt.
Language = Literal["en", "zh"]
