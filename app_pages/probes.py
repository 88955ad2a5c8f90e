"""Probes: the run's HBM read-probe curve (bytes → µs and TB/s) with the write-up's four probes overlaid."""
import pandas as pd
import streamlit as st

from ui import figures, loaders, terms, view, widgets

selection = view.pick(probes_only_ok=True)
memory = view.memory_word(selection)
st.title(f"Probes — {memory} read curve")
view.caption_source(selection, "Probe times are measured (run probes) or published (the write-up's four); TB/s = bytes ÷ "
                         "time (derived).")
terms.link("floor", "provenance")
seed = loaders.seed_probes()
muse_only = view.official_note(selection.workload) if selection.kind == "run" else None
if muse_only is not None:
    st.caption(f"The write-up's four probes come with muse_bf16_proj's published data ({muse_only}); they are HBM "
               "read times of an H200, so they are overlaid as a hardware reference only.")
probes = pd.DataFrame(selection.run.get("probes", [])) if selection.run else pd.DataFrame()
if selection.kind != "run":
    st.info("The published table has no probe curve of its own; showing the write-up's four probes "
            "(**published**). Pick a run in the sidebar to see its **measured** curve.")
elif probes.empty:
    st.warning(f"{widgets.md_text(selection.label)} holds no probes (run `python -m profiler probe` on the device).")
show_seed = st.toggle("Overlay the write-up's four probes (published)", value=True)
parts = (["measured (run probes)"] if len(probes) else []) + (["published (write-up probes)"] if show_seed else [])
st.plotly_chart(figures.probe_curve(probes if len(probes) else None, seed if show_seed else None,
                                    " vs ".join(parts) or "nothing selected", memory), width="stretch", theme=None)
if len(probes):
    st.subheader("Run probes (measured)" if "derived" not in probes else
                 "Run probes (measured; the per-shape floors derived from the fastest rate)")
    cols = [c for c in ("bytes", "us", "tbps", "design", "kind", "for_shape") if c in probes]
    st.dataframe(probes[cols], hide_index=True, width="stretch", column_config={
        "bytes": st.column_config.NumberColumn("bytes", format="%d"),
        "us": st.column_config.NumberColumn("µs", format="%.3f"),
        "tbps": st.column_config.NumberColumn("TB/s", format="%.3f")})
    widgets.download_csv(probes[cols], "probes.csv")
st.subheader("Write-up probes (published)")
st.dataframe(seed, hide_index=True, width="stretch")
