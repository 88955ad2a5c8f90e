"""What the numbers mean: pure functions over pandas/numpy (never torch, never streamlit)."""
