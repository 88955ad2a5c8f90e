"""The figures the pages draw: dashboard/plots' pure functions (data frame in, plotly figure out), named here so a page
reaches them through ui/. The Step page's own figures are in ui.steps."""
from dashboard.plots.figures import (above_floor_bars, compare_figure, dispatch_figure, family_bars, fleet_figure,
                                     ledger_figure, line_figure, load_time_bars, ratio_bars, series_colors, share_bars,
                                     telemetry_figure)
from dashboard.plots.kernel_figures import bytes_vs_ideal, gap_parts_bars, kernel_roofline, kernel_stack
from dashboard.plots.roofline_figures import probe_curve, roofline, time_vs_floor

__all__ = ["above_floor_bars", "compare_figure", "dispatch_figure", "family_bars", "fleet_figure", "ledger_figure",
           "line_figure", "load_time_bars", "ratio_bars", "series_colors", "share_bars", "telemetry_figure",
           "bytes_vs_ideal", "gap_parts_bars", "kernel_roofline", "kernel_stack", "probe_curve", "roofline",
           "time_vs_floor"]
