"""Tools imported from OpenAPI 3.0/3.1 documents, executed by the guarded `HttpTool`.

Each selected operation becomes one tool: its name from ``operationId`` (else method and path), its
description from ``summary``/``description``, its arguments one JSON-schema object of the path, query
and header parameters plus the JSON request body under ``body``::

    loader = DocumentLoader(config_dir=config_dir)
    tools = import_openapi_tools(source, loader=loader, http_clients=ClientsByOrigin(), secret_resolver=resolver)
"""

from stepwise.tools.openapi.importer import base_url_for, import_openapi_tools, openapi_api_config
from stepwise.tools.openapi.loader import DocumentLoader, LoadedDocument, parse_document

__all__ = [
    "DocumentLoader",
    "LoadedDocument",
    "base_url_for",
    "import_openapi_tools",
    "openapi_api_config",
    "parse_document",
]
