"""Quality measurements of Side's components against shared, labelled data."""
