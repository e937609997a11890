"""Placeholder until this command group lands."""

from __future__ import annotations


def register(sub) -> None:
    return None
