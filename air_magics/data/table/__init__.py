"""The parts of :class:`~air_magics.data.UCDataset`: source resolution, row filter, row planning, reading."""

__all__: list[str] = []
