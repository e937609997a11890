"""How well a sentence splitter finds sentences whose boundaries someone else drew.

Sentences of a known split (WiCE's evidence, SciFact's abstracts) are joined into one paragraph
with a space and split again. Only a boundary after terminal punctuation counts as one to find:
a page's heading or menu item joined to the next sentence has no mark any splitter could see,
and a boundary found there is not counted against the splitter either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from side.data import load_scifact_corpus, load_wice
from side.retrieval.corpus import wice_page_sentences

__all__ = ["Boundaries", "boundaries", "joined_paragraphs", "wice_evidence", "scifact_abstracts", "clean"]

#: A sentence that ends where a splitter can see it end: terminal punctuation, then closing
#: quotes or brackets.
ENDS = re.compile(r"[.!?][\"')\]\u201d\u2019]*$")
_SPACE = re.compile(r"\s+")


def clean(sentences: Iterable[str]) -> list[str]:
    """Each sentence with its whitespace collapsed; empty ones left out."""
    return [s for s in (_SPACE.sub(" ", s).strip() for s in sentences) if s]


def wice_evidence(path: str | Path) -> list[str]:
    """The sentences of every page a WiCE file's claims cite, in file order (a page cited by
    several claims comes once per claim)."""
    return clean(s for claim in load_wice(path) for s in wice_page_sentences(claim.evidence))


def scifact_abstracts(path: str | Path) -> list[list[str]]:
    """The sentences of each abstract of a SciFact corpus file."""
    return [clean(doc.sentences) for doc in load_scifact_corpus(path).values()]


@dataclass(frozen=True)
class Boundaries:
    """Boundaries a splitter found, those it should find, and those it found right."""

    found: int
    wanted: int
    right: int

    @property
    def precision(self) -> float:
        return self.right / self.found if self.found else 0.0

    @property
    def recall(self) -> float:
        return self.right / self.wanted if self.wanted else 0.0

    @property
    def f1(self) -> float:
        return 2 * self.right / (self.found + self.wanted) if self.found + self.wanted else 0.0


def _ends(text: str, parts: list[str]) -> list[int]:
    """Where each part but the last ends in ``text``: the start of what follows it."""
    ends, at = [], 0
    for part in parts[:-1]:
        found = text.find(part, at)
        if found < 0:
            raise ValueError(f"a sentence is not the text's own: {part[:60]!r}")
        at = found + len(part)
        while at < len(text) and text[at].isspace():
            at += 1
        ends.append(at)
    return ends


def boundaries(groups: Iterable[list[str]], split: Callable[[str], list[str]]) -> Boundaries:
    """``split``'s boundaries in each group of sentences joined by spaces, against the group's."""
    found = wanted = right = 0
    for group in groups:
        text = " ".join(group)
        gold = _ends(text, group)
        visible = {end for end, sentence in zip(gold, group, strict=False) if ENDS.search(sentence)}
        predicted = set(_ends(text, split(text)))
        found += len(predicted - (set(gold) - visible))
        wanted += len(visible)
        right += len(predicted & visible)
    return Boundaries(found, wanted, right)


def joined_paragraphs(sentences: list[str], most: int = 4) -> str:
    """A page's sentences joined back into paragraphs: a sentence after terminal punctuation
    continues the paragraph (at most ``most`` sentences), any other starts a new line."""
    lines: list[list[str]] = []
    for sentence in sentences:
        if lines and len(lines[-1]) < most and ENDS.search(lines[-1][-1]):
            lines[-1].append(sentence)
        else:
            lines.append([sentence])
    return "\n".join(" ".join(line) for line in lines)
