"""Regular expressions others write, run on RE2: an operator's intent rules, deny patterns, eval matchers and
scripted scenarios, and the `pattern` keywords of tool and answer schemas (`stepwise.patterns.schema_keywords`).

Python's `re` backtracks: `(a+)+$` against forty `a` and a `!` does not end, and has no timeout. RE2 takes
time linear in the text whatever the pattern, at the price of backreferences and lookaround, which it has
not. `linear.py` compiles (once per pattern, lazily importing RE2) and names what RE2 refuses.
"""
