"""Which operation a `find_tools` query asks for, and which one a tool does: the verbs they agree on.

Words alone rank a tool that mentions what was asked above the one that does it: "confirm a payment"
finds "Update a PaymentIntent" and "Confirm a PaymentIntent" alike, "show the branches of a repo" "Get a
branch" and "List branches". `stepwise.tools.find_tools` raises the tools whose operation agrees with
the query's:

- a tool's verbs (`tool_verbs`) are the first word of its summary and of its name (operation ids start
  with their method or verb: ``PostCustomers``, ``create_message``), with their `SYNONYMS`, and ``list``
  when its summary says it gives one within its first words ("Retrieves a list of themes");
- a query's verbs (`query_verbs`) are its first word with its synonyms, and the verb it implies
  (`implied_verb`: "refund an order" asks to create a refund); not a "get" that makes a passive ("get
  notified", "get paid"), which asks for no retrieval;
- a query asks for many (`asks_for_many`) when it asks for a list, or names a thing in the plural and no
  verb that changes one ("recent commits", "the branches of a repo", but not "delete old messages").

Only the shape of English requests and of API summaries is used, nothing of one API.
"""

from __future__ import annotations

from stepwise.tools.search_words import STOP_WORDS, SYNONYMS, implied_verb, raw_words, stem

LIST = stem("list")
# API summaries say "Returns a customer" for what people call getting one; "retrieve" and "fetch" are
# `SYNONYMS` of get already.
_SUMMARY_VERBS = {stem("return"): stem("get")}
# "Retrieves a list of", "Get a list of": the list is said within the first three words of a summary.
_LIST_WITHIN = 3
_GET = "get"
# Irregular past participles that make "get X" a passive; regular ones end in -ed.
_PARTICIPLES = frozenset(["paid", "sent", "made", "done", "given", "taken", "kept", "told", "shown"])
# Verbs of queries that change one thing: a plural after them is what they change, not a list asked for.
_CHANGING = frozenset(stem(verb) for verb in ("create", "delete", "update", "cancel", "send", "merge", "close", "set"))


def tool_verbs(summary: list[str], name: list[str]) -> frozenset[str]:
    """The operation a tool does, as search words: see the module docstring."""
    firsts = [_SUMMARY_VERBS.get(field[0], field[0]) for field in (summary, name) if field]
    if LIST in summary[:_LIST_WITHIN]:
        firsts.append(LIST)
    return _with_synonyms(firsts)


def query_verbs(query: str, asked: list[str]) -> frozenset[str]:
    """The operation ``query`` (whose search words are ``asked``) asks for: see the module docstring."""
    implied = implied_verb(query)
    verbs = [implied] if implied else []
    said = raw_words(query)
    passive = len(said) > 1 and said[0] == _GET and (said[1].endswith("ed") or said[1] in _PARTICIPLES)
    if asked and not passive:
        verbs.append(asked[0])
    return _with_synonyms(verbs)


def asks_for_many(query: str, verbs: frozenset[str]) -> bool:
    """Whether ``query``, whose operation is ``verbs``, asks for a list of things."""
    if LIST in verbs:
        return True
    if verbs & _CHANGING:
        return False
    return any(raw.endswith("s") and raw not in STOP_WORDS and stem(raw) != raw for raw in raw_words(query))


def _with_synonyms(verbs: list[str]) -> frozenset[str]:
    return frozenset(each for verb in verbs for each in (verb, *SYNONYMS.get(verb, ())))
