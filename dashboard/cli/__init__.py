"""The command lines: `python -m dashboard summarize|table|compare|explain|report|results|noise|index|validate`."""
