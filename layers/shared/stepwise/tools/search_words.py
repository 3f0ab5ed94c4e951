"""The words `find_tools` compares: tool names, descriptions and queries reduced to the same forms.

- Names split at every separator operation ids use (``/``, ``-``, ``_``, ``.``), at case changes and at
  digits: ``issues/list-for-repo`` and ``PostCustomersCustomerTaxIds`` are words like any other text.
- Words are lower-cased and reduced by inflection only (`stem`): ``issues``/``issue``,
  ``listing``/``list``, ``starred``/``star``, ``created``/``creates``/``create``,
  ``notified``/``notifies``/``notify`` meet; derivations
  (``follower``/``follow``) are left to the index, which relates words of the tools' own vocabulary
  that share most of their letters (see `stepwise.tools.find_tools`).
- Abbreviations APIs and people use interchangeably are spelt out: ``repo`` → repository, ``org`` →
  organization, ``PR`` → pull request, ``DM`` → direct message, ``config`` → configuration; ``my``, ``me``
  and ``mine`` are one word, `SYNONYMS` of the authenticated or current user. Phrases that stand for one
  word of API vocabulary are that word: "how many" is a count, "logged in as" the authenticated user, "who
  am I" me, "money back" a refund, "turn off" disable and "turn on" enable.
- Other English function words (``the``, ``does``...), HTML tags, entities and URLs are no words.
- `SYNONYMS`: the verbs people use for the same operation (``remove`` and ``kick`` for delete, ``make``
  for create), matched at a lower weight than the word itself, so a tool that says the query's own word
  still wins; and a few one way only: asking to be notified asks for a webhook or a watch, but a webhook
  is no notification.
- `implied_verb`: the operation a request asks for without naming its verb ("refund an order" to create
  a refund, "which themes ..." for a list).

Hand-written rather than a stemmer library's (Porter, Snowball): those also fold derivations
(``organization`` and ``organize``, ``general`` and ``generate``), which merges distinct operations of an
API, and the one maintained pure-Python choice would be a new dependency of the Lambda layer for a few
lines of rules.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

# a tag holds no "<": a run of "<" never closed is then read in one pass, not rescanned from each one
_MARKUP = re.compile(r"<[^<>]*>|https?://\S+|&[a-z]+;")
# A capitalised or lower-case run, an upper-case run (an acronym), or digits.
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_VOWEL = re.compile(r"[aeiouy]")
# Phrases people ask with for what APIs name in one word: "how many products" is a count of products.
_PHRASES = {
    "how many": "count",
    "number of": "count",
    "logged in as": "authenticated",
    "signed in as": "authenticated",
    "who am i": "me user",
    "money back": "refund",
    "turn off": "disable",
    "switch off": "disable",
    "turn on": "enable",
    "switch on": "enable",
}
_PHRASE = re.compile(r"\b(" + "|".join(_PHRASES) + r")\b", re.IGNORECASE)
_FUNCTION_WORDS = (
    "a about also am an and any are as at be been being by can could did do does doing done for from had has "
    "have having he her here hers him his how i if in into is it its just may might must "
    "need of on only or our ours own please same shall she should so some someone something such than that "
    "the their theirs them then there these they this those to too up us very want was we were what when "
    "where which why will with would you your yours"
)
STOP_WORDS = frozenset(_FUNCTION_WORDS.split())
_ABBREVIATIONS = {
    "repo": ("repository",),
    "org": ("organization",),
    "pr": ("pull", "request"),
    "config": ("configuration",),
    "dm": ("direct", "message"),
    "msg": ("message",),
    "info": ("information",),
    "env": ("environment",),
    "my": ("me",),
    "mine": ("me",),
    "myself": ("me",),
}
# Particles that make a phrasal verb of the word before them; an API often writes the pair as one
# word ("pay out" and payout, "check out" and checkout, "log in" and login).
_PARTICLES = frozenset(["up", "out", "in", "on", "off", "down", "back", "over"])
# Words that make the word before them a verb ("comment on an issue", "star a repo").
_DETERMINERS = frozenset(
    ["a", "an", "the", "my", "our", "your", "this", "that", "some", "all", "on", "to", "for", "from"]
)
_QUESTION_WORDS = frozenset(["which"])
# Verbs of operations that are not creating one and are no synonym of another verb.
_OTHER_VERBS = ("merge", "close", "set", "download", "count", "check", "test")
_SYNONYM_GROUPS = (
    ("create", "add", "make", "new", "post", "open", "give", "grant", "upload", "register", "write", "submit"),
    ("get", "retrieve", "fetch", "show", "read", "look", "view", "lookup"),
    ("list", "show"),
    ("delete", "remove", "destroy", "erase", "kick"),
    ("update", "edit", "modify", "change", "patch", "rename", "replace"),
    ("search", "find", "query", "lookup"),
    ("cancel", "stop", "abort"),
    ("send", "email", "mail", "post"),
    ("issue", "bug", "ticket"),
    ("who", "people", "person", "member"),
    ("request", "ask"),
    ("bulk", "batch", "many", "multiple", "several"),
    ("me", "authenticated", "current"),
    ("event", "happen", "activity", "history"),
)
# Words whose synonyms do not have them as synonyms in turn: asking to be notified is asking for a webhook or
# a watch, but a webhook is no notification (an API's notifications are often an inbox of their own).
_ONE_WAY = {
    "notify": ("webhook", "watch", "subscribe"),
    "notification": ("webhook", "watch", "subscribe"),
}


# Past forms of common verbs that no suffix rule undoes ("when was I paid out"). Not those of the verbs of
# `SYNONYMS` (made, sent, given, got, found): descriptions use them in passing ("the charge made by"), and
# they would then count as the operation's verb (measured: they lowered the ranks of the queries of tests/).
_IRREGULAR = {
    "paid": "pay",
    "took": "take",
    "taken": "take",
    "left": "leave",
    "bought": "buy",
    "sold": "sell",
    "built": "build",
    "ran": "run",
    "began": "begin",
    "begun": "begin",
    "chose": "choose",
    "chosen": "choose",
    "held": "hold",
    "kept": "keep",
    "lost": "lose",
    "spent": "spend",
    "won": "win",
    "hid": "hide",
    "hidden": "hide",
    "froze": "freeze",
    "frozen": "freeze",
}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """``word`` (lower case) without its inflection: plural, ``-ing``, ``-ed`` (``-ies`` and ``-ied`` to
    ``-y``), a final ``e``, and the past forms of common irregular verbs."""
    word = _IRREGULAR.get(word, word)
    if len(word) > 4 and word.endswith(("ies", "ied")):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith(("sses", "ches", "shes", "xes")):
        word = word[:-2]
    elif len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        root = word[: -len(suffix)]
        if word.endswith(suffix) and len(root) > 2 and _VOWEL.search(root):
            # starred → star, pinned → pin; but added, installed and passed keep their double letter
            if len(root) > 3 and root[-1] == root[-2] and root[-1] in "bdgmnprt":
                root = root[:-1]
            word = root
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def without_markup(text: str) -> str:
    """``text`` with HTML tags, entities and URLs replaced by spaces."""
    return _MARKUP.sub(" ", text)


def raw_words(text: str) -> list[str]:
    """The lower-cased words of ``text`` as written, markup left out (nothing dropped or reduced)."""
    return [raw.lower() for raw in _WORD.findall(without_markup(text))]


def words(text: str) -> list[str]:
    """The search words of ``text``: split, lower-cased, reduced (`stem`), abbreviations spelt out,
    function words left out."""
    plain = _PHRASE.sub(lambda match: _PHRASES[match.group(1).lower()], without_markup(text))
    return [word for raw in _WORD.findall(plain) for word in _search_forms(raw)]


@lru_cache(maxsize=65536)
def _search_forms(raw: str) -> tuple[str, ...]:
    """What one word as written stands for: nothing (a function word), its abbreviation spelt out, or its stem.

    Cached: a description of thousands of words has a few hundred distinct ones.
    """
    word = raw.lower()
    if word in STOP_WORDS:
        return ()
    spelt_out = _ABBREVIATIONS.get(word) or _ABBREVIATIONS.get(word.removesuffix("s"))
    return tuple(stem(each) for each in spelt_out) if spelt_out else (stem(word),)


def phrasal_compounds(text: str) -> dict[str, str]:
    """The one-word forms of the phrasal verbs in ``text``, by their verb's search word: ``pay out`` → payout."""
    said = raw_words(text)
    return {
        stem(verb): stem(_IRREGULAR.get(verb, verb) + particle)
        for verb, particle in itertools.pairwise(said)
        if particle in _PARTICLES
    }


def implied_verb(text: str) -> str | None:
    """The search word of the operation ``text`` asks for without naming its verb, or None.

    - ``list`` for a question about which things there are ("which themes does the store have"; not "what",
      which as often asks for one thing: "what is my balance");
    - ``create`` for a request that starts with a verb naming a thing, none of `SYNONYMS`' ("comment on an
      issue", "refund an order"): such a request is most often to make one. The first word is taken as a
      verb when an article, a possessive or a preposition follows it.
    """
    said = raw_words(text)
    if said and said[0] in _QUESTION_WORDS:
        return stem("list")
    if len(said) < 2 or said[1] not in _DETERMINERS:
        return None
    verb = _search_forms(said[0])
    return stem("create") if len(verb) == 1 and verb[0] not in SYNONYMS and verb[0] not in _OTHER_VERB_STEMS else None


def _synonyms() -> dict[str, tuple[str, ...]]:
    related: dict[str, set[str]] = {}
    for group in _SYNONYM_GROUPS:
        stems = [stem(word) for word in group]
        for each in stems:
            related.setdefault(each, set()).update(other for other in stems if other != each)
    for word, others in _ONE_WAY.items():
        related.setdefault(stem(word), set()).update(stem(other) for other in others)
    return {word: tuple(sorted(others)) for word, others in related.items()}


SYNONYMS = _synonyms()
_OTHER_VERB_STEMS = frozenset(stem(verb) for verb in _OTHER_VERBS)
