"""Figures: plotly layout of what dashboard.model computed (they compute nothing that matters)."""
