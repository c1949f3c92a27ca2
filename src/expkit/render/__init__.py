"""Presentation only: JSON, rich console output, matplotlib figures, the HTML report."""
