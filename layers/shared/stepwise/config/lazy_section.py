"""Optional configuration sections validated by a model imported and built only when a file has them.

`StepwiseConfig`'s schema is built by every function that reads the file, at its cold start. Sections that
most files leave out (intent classification and routes, a profile's guardrails and online evaluations) would
add their modules and their part of that schema to every cold start; declared with `lazy_section`, the
section's model is imported and its validator built the first time a file holds the section. Validation is
the same: the section's own model validates it, and its errors keep their field paths under the section's.
"""

import importlib
from typing import Annotated, Any

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema


class _LazyModel:
    """Validates a value with `module.name`, a pydantic model imported when a value first needs it."""

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name

    def model(self) -> type[BaseModel]:
        """The section's model (imported on first use; Python keeps the module)."""
        model: type[BaseModel] = getattr(importlib.import_module(self._module), self._name)
        return model

    def validate(self, value: Any) -> BaseModel:
        """`value` as the section's model: an instance as it is, anything else validated."""
        model = self.model()
        return value if isinstance(value, model) else model.model_validate(value)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        # serialized as `Any`: pydantic dumps a model instance with its own model's serializer
        return core_schema.no_info_plain_validator_function(self.validate)


def lazy_section(module: str, name: str) -> Any:
    """An annotation that validates with the model `name` of `module`, imported on first use.

    Declare the real class under `TYPE_CHECKING` for type checkers, and this in its place at run time.
    """
    return Annotated[Any, _LazyModel(module, name)]
