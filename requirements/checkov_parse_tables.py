"""Write the parse tables of checkov's JSONPath parser into its package, once, at install.

checkov renders a template's references through `bc_jsonpath_ng`, whose parser asks ply to build its LALR
tables again for every expression it parses and never writes them (637 builds for template.yaml: 27 of
checkov's 34 s of CPU, measured 2026-11-28). ply reads tables it finds beside the parser's module before
building any, and uses them only when their grammar's signature is the parser's, so a table left from
another version is rebuilt, never misread. Run by the static environment's interpreter (`make static`'s
install).
"""

from __future__ import annotations

import os

import ply.yacc
from bc_jsonpath_ng import parser as base_parser
from bc_jsonpath_ng.ext import parser as extended_parser

# the names bc_jsonpath_ng's parse asks ply for: "<module>_<start symbol>_parsetab", in its package
TABLE_MODULE = "parser_jsonpath_parsetab"


def main() -> None:
    """Write the tables of the base parser and of the extended one (checkov uses the latter)."""
    for module, parser in (
        (base_parser, base_parser.JsonPathParser()),
        (extended_parser, extended_parser.ExtentedJsonPathParser()),
    ):
        ply.yacc.yacc(
            module=parser,
            tabmodule=TABLE_MODULE,
            outputdir=os.path.dirname(module.__file__),
            write_tables=True,
            start="jsonpath",
            debug=False,
            errorlog=ply.yacc.NullLogger(),
        )


if __name__ == "__main__":
    main()
