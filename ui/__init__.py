"""The app's plumbing beside its page scripts (app_pages/): loaders (cached reads of every input and what pages
derive from a run), uploads (kept on this server by content hash), state (widgets bound to the URL), view (the
sidebar's source and pair, the View a page draws), widgets (how figures and tables look), terms (the glossary's
words), and one module per job for the data a page shows: figures, tables (the run pages'), compare, kernels,
steps, fleet, planning, plans, measure, targets. A page imports only ui/ (tests/test_architecture.py). Imports
dashboard/, datasets/ and streamlit; dashboard/ never imports it."""
