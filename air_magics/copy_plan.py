"""Kept for existing imports: the planner lives in :mod:`air_magics.transfer.plan`."""

from __future__ import annotations

from .transfer.plan import CopyPlan, parse_sources, plan_copy

__all__ = ["CopyPlan", "plan_copy", "parse_sources"]
