"""Fusion rules of the audio front end (issue 19), read by ``compiler.passes.fuse`` after the
image rules of ``compiler.fusion_rules``.

Each entry is a :class:`compiler.fusion_rules.Rule` (producer ops, consumer ops, a check that
returns a refusal reason or None, a rewrite into one fused node). Kept apart from the image
table so the two families grow independently; the driver and its generic legality checks are
shared.
"""
from __future__ import annotations

from compiler.fusion_rules import Rule

RULES: tuple[Rule, ...] = ()
