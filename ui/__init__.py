"""The app's plumbing beside its page scripts (app_pages/): loaders (cached reads of every input and what pages
derive from a run), uploads (kept on this server by content hash), state (widgets bound to the URL), view (the
sidebar's source and pair, the View a page draws) and widgets (how figures and tables look). Imports dashboard/,
datasets/ and streamlit; dashboard/ never imports it."""
