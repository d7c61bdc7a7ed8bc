"""pytest-roofline plugin wiring (being written)."""
