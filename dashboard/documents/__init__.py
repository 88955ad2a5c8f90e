"""The documents dashboard/ generates: run reports (HTML, Markdown, CSV, JSON), RESULTS.md and the run index (dashboard/documents/run_index.json)."""
