"""Quality measurements of Side's components against shared, labelled data."""

__all__ = []
