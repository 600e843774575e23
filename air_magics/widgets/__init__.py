"""Notebook displays (front end): copy progress, the live cache, checkpoint and training views, with text
fallbacks; and the listeners the extension attaches to :mod:`air_magics.events` (:mod:`.listeners`)."""

from ._frontend import has_widget_frontend
from .cache_view import CacheView, cache_html, cache_text, latest_loader
from .checkpoint_view import (
    CheckpointTimeline,
    CheckpointView,
    checkpoint_timeline,
    checkpoint_view,
    checkpoints_html,
    checkpoints_text,
)
from .copy_progress import TextCopyProgress, WidgetCopyProgress, copy_progress_view, describe
from .training_view import LoaderCharts, TrainingView, training_view

__all__ = [
    "has_widget_frontend",
    "copy_progress_view",
    "WidgetCopyProgress",
    "TextCopyProgress",
    "describe",
    "CacheView",
    "cache_html",
    "cache_text",
    "latest_loader",
    "CheckpointView",
    "checkpoint_view",
    "CheckpointTimeline",
    "checkpoint_timeline",
    "checkpoints_html",
    "checkpoints_text",
    "TrainingView",
    "training_view",
    "LoaderCharts",
]
