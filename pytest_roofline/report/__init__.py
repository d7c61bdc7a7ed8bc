"""Rendering: one view model, rendered as JSON, Markdown, terminal text and HTML. Nothing here decides."""
