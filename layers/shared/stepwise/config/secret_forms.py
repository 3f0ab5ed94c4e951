"""The forms of a secret the redactor searches for in decoded text, and the one pattern that finds them.

Decoding (`stepwise.inputs.echo_decoding`) undoes what can be undone in place: escapes, compatibility
characters, separators between characters, letter case. What depends on where the secret starts, or on the
secret as a whole, is listed here instead, each form already in its decoded normal form:

- the secret itself (with `+` for a space, as a query string writes it), reversed, and in rot13;
- base64, base64url, base32 and hex of the secret and of each of its halves, at every byte alignment (so
  `Basic base64(user:secret)` is found); and the secret nested in two of base64, base64url and hex (base64
  of base64, hex of base64, base64 of hex…: base32 is rare enough once, and every form costs search time);
- every contiguous part of the secret as long as `part_length` says (its shorter half, and at least
  `MIN_REDACTED_LENGTH`), when the part looks like a credential rather than a word or a number
  (`is_distinctive`): a part of a key that was a common word would replace that word everywhere.

Dozens of forms make one alternation that Python's engine would try one by one at every position of the
text; `literal_pattern` shares their common beginnings instead (a trie written as a regular expression),
which keeps the search about as fast as with a handful of forms. No standard-library or already-installed
package matches many literals at once, and Aho-Corasick implementations are C extensions the Lambda layer
would have to build for its platform, so the trie is written here.
"""

from __future__ import annotations

import base64
import codecs
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Replacing a value this short inside text would mangle it (every "x", or "ollama" in a sentence about
# Ollama) while protecting little: a credential that short is guessable anyway. Such a secret is still
# accepted (local model servers take any key) and replaced where it is a whole value.
MIN_REDACTED_LENGTH = 8

# A part at least this long is searched whatever it looks like: no ordinary text holds one by chance.
ANY_SHAPE_PART_LENGTH = 16
# A shorter part is searched only when it changes between letters, digits and other characters this often
# and holds both letters and digits: `x7kp2mq9` is a piece of a key, `password`, `20240115` and `assword1` are not.
_MIN_CLASS_CHANGES = 3
# ...and only when it is not a run of a few characters (`aaaaaaaaaaaaaaaa`, `0101010101010101`).
_MIN_DISTINCT_CHARACTERS = 5


def _decoded(form: str) -> str:
    """A form as decoding leaves it in a text: escapes undone, lower case (separators are joined in text only)."""
    # the decoder (its patterns and tables) loads with the first secret a process learns, not with the store
    from stepwise.inputs.echo_decoding import normalize

    return normalize(form, join_separated=False).text


def _aligned_middles(data: bytes, encode: Callable[[bytes], bytes], bits: int, alignments: int) -> set[str]:
    """The characters of `encode(prefix + data)` that depend on `data` alone, for each length of prefix.

    Base64 and base32 write `bits` bits a character, so what a secret encodes to depends on how many bytes
    come before it (a Basic credential's `user:`); the characters wholly inside the secret do not.
    """
    middles = set()
    for offset in range(alignments):
        encoded = encode(b"\0" * offset + data).decode("ascii")
        middles.add(encoded[-(-8 * offset // bits) : 8 * (offset + len(data)) // bits])
    return middles


def _base64_and_hex(data: bytes) -> set[str]:
    """base64 and base64url of `data` at every alignment, and its hex: the encodings nested in one another."""
    base64_forms = _aligned_middles(data, base64.b64encode, 6, 3)
    return {data.hex(), *base64_forms, *(form.replace("+", "-").replace("/", "_") for form in base64_forms)}


def encoded_forms(data: bytes) -> set[str]:
    """base64, base64url, base32 and hex of `data`, at every alignment: the encodings decoding cannot undo."""
    return _base64_and_hex(data) | _aligned_middles(data, base64.b32encode, 5, 5)


def secret_forms(secret: str) -> set[str]:
    """The normal forms of `secret` searched for in normal text (its parts aside), each long enough to redact."""
    halves = (secret[: len(secret) // 2], secret[len(secret) // 2 :])
    forms = {secret, secret.replace(" ", "+"), secret[::-1], codecs.encode(secret, "rot13")}
    forms |= encoded_forms(secret.encode("utf-8"))
    for encoded in _base64_and_hex(secret.encode("utf-8")):
        forms |= _base64_and_hex(encoded.encode("ascii"))
    for half in halves:
        forms |= encoded_forms(half.encode("utf-8"))
    normal = {_decoded(form) for form in forms}
    return {form for form in normal if len(form) >= MIN_REDACTED_LENGTH}


def part_length(secret: str) -> int:
    """How long a part of `secret` must be to be searched: half the secret (its shorter half, so both halves
    are parts), and at least the minimum."""
    return max(MIN_REDACTED_LENGTH, len(secret) // 2)


def is_distinctive(part: str) -> bool:
    """True when `part` (in normal form) looks like a piece of a credential, not like a word or a number."""
    if len(set(part)) < _MIN_DISTINCT_CHARACTERS:
        return False
    if len(part) >= ANY_SHAPE_PART_LENGTH:
        return True
    classes = ["digit" if char.isdigit() else "letter" if char.isalpha() else "other" for char in part]
    changes = sum(1 for before, after in itertools.pairwise(classes) if before != after)
    return changes >= _MIN_CLASS_CHANGES and "digit" in classes and "letter" in classes


@dataclass(frozen=True)
class SecretPart:
    """A part of a secret, as a form: the secret (normal form) it came from and where in it the part starts."""

    secret: str
    offset: int


def secret_parts(secret: str) -> dict[str, list[SecretPart]]:
    """Every distinctive part of `secret` of `part_length` characters (the whole secret excluded), by text."""
    normal = _decoded(secret)
    length = part_length(normal)
    parts: dict[str, list[SecretPart]] = {}
    for offset in range(len(normal) - length + 1):
        part = normal[offset : offset + length]
        if part != normal and is_distinctive(part):
            parts.setdefault(part, []).append(SecretPart(normal, offset))
    return parts


# A node of the trie: the next characters and their nodes; the key "" marks the end of a word.
_Trie = dict[str, "_Trie"]


def literal_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """A regular expression matching any of `words` (non-empty), the longest one first where several start.

    The words are put in a trie, and the trie is written as nested alternations, a run of single children
    as one literal: at each position the engine compares one character per branch, not one per word.
    """
    root: _Trie = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return re.compile(_alternatives(root))


def _alternatives(node: _Trie) -> str:
    branches = []
    for char in sorted(key for key in node if key):
        literal, child = char, node[char]
        while len(child) == 1 and "" not in child:
            ((next_char, child),) = child.items()
            literal += next_char
        branches.append(re.escape(literal) + _alternatives(child))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    # a word ending here is matched only when no longer one goes on (the `?` is greedy)
    return f"(?:{body})?" if "" in node else body
