"""What the numbers mean: the model. Pure functions over pandas/numpy from run files and published tables to scores, floors, SOL, verdicts and tables (never torch, never streamlit)."""
