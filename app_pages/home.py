"""The app's root address ("/"): the Overview. Streamlit serves its default page at "/" and only there, so the
Overview itself is an ordinary page at /overview (the address pattern of every other page: a link or a bookmark
to it works) and this hidden default page runs the Overview's script at the root."""
import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).with_name("overview.py")), run_name="__main__")
