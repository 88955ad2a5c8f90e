"""State in the session and the URL: a widget bound to ?param=<name> keeps its value in st.session_state (so it
survives page switches) and in the URL query (so a reload or a shared link reproduces the view). A URL value that
does not exist gets an st.warning and the default instead.
"""
from __future__ import annotations

import streamlit as st

from dashboard.model import sources
from ui.widgets import md_text


def url_choice(param: str, names: list[str], default: str, what: str | None = None) -> str:
    """The current value of `param` among `names`: a URL value that changed since projlab last wrote it (a link,
    a reload, an edited address) wins; else this session's choice; else `default`. An unknown URL value is
    reported with st.warning and replaced by the default."""
    state = st.session_state
    q = st.query_params.get(param)
    chosen = state.get(f"_sel_{param}")
    if q is not None and q != state.get(f"_url_{param}"):
        if q in names:
            chosen = q
        else:
            fallback = chosen if chosen in names else default
            st.warning(md_text(sources.missing_upload(q) if param == "source" and sources.missing_upload(q) else
                               f"The address asks for {what or param} {q!r}, which is not available here; showing "
                               f"{fallback!r} instead."))
            chosen = fallback
    if chosen not in names:
        chosen = default
    state[f"_sel_{param}"] = chosen
    return chosen


def url_write(param: str, value) -> None:
    st.query_params[param] = value
    st.session_state[f"_url_{param}"] = value


def _picked(key: str, param: str, by_label: dict) -> None:
    st.session_state[f"_sel_{param}"] = by_label[st.session_state[key]]


def url_selectbox(box, label: str, options: dict[str, str] | list[str], param: str, default: str | None = None,
                  key: str | None = None, what: str | None = None, **kw) -> str:
    """A selectbox bound to ?param=<name>: `options` maps the URL name → the label shown (or is a list of names
    shown as they are). Returns the chosen name."""
    options = dict(options) if isinstance(options, dict) else {o: str(o) for o in options}
    names = list(options)
    name = url_choice(param, names, default if default in options else names[0], what)
    key = key or param
    # Always (re)seed the widget: after a page switch the key still holds the old page's value, but the new page's
    # widget is a different one and would otherwise start at its first option (the source reset on page switch).
    st.session_state[key] = options[name]
    box.selectbox(label, list(options.values()), key=key, on_change=_picked,
                  args=(key, param, {v: k for k, v in options.items()}), **kw)
    url_write(param, name)
    return name


def _picked_many(key: str, param: str) -> None:
    st.session_state[f"_sel_{param}"] = list(st.session_state[key])


def url_multiselect(box, label: str, options: list[str], param: str, default: list[str], key: str | None = None,
                    **kw) -> list[str]:
    """A multiselect bound to ?param=a&param=b; unknown URL values are dropped with st.warning."""
    state, key = st.session_state, key or param
    q = st.query_params.get_all(param)
    chosen = state.get(f"_sel_{param}")
    if q and q != state.get(f"_url_{param}"):
        unknown = [v for v in q if v not in options]
        if unknown:
            st.warning(f"The address asks for {md_text(', '.join(map(repr, unknown)))}, not available here; left "
                       "out.")
        chosen = [v for v in q if v in options]
    chosen = [v for v in chosen if v in options] if chosen is not None else []
    chosen = chosen or [v for v in default if v in options]   # nothing left of the old choice: the default
    state[f"_sel_{param}"] = chosen
    state[key] = chosen  # reseeded every run, as in url_selectbox
    box.multiselect(label, options, key=key, on_change=_picked_many, args=(key, param), **kw)
    url_write(param, chosen)
    return chosen

