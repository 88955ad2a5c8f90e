"""A workload's decoder layer (the optional top-level "layer" of a workload file): what one decode step runs around
the projections, so the profiler can measure the whole step (`python -m profiler step`).

    check_layer(c, layer, families)   # the workload checker (datasets.workload_spec._Checker) notes every problem
    layer_of(workload) -> DecoderLayer | None
    ROLES_GATED, ROLES_ROUTED         # the matmuls of a layer, each named to one projection family

Schema (datasets/README.md, "The decoder layer"):
    "layer": {"source": provenance, "assumed": what was assumed (optional), "hidden": H, "model_layers": L,
              "attention": {"heads", "kv_heads", "head_dim", "context": [lengths], "rope_theta"},
              "mlp": {"kind": "gated", "intermediate": I, "activation": "silu"}
                     | {"kind": "routed", "experts": E, "top_k": k, "intermediate": I, "activation": "silu"},
              "norm": {"kind": "rmsnorm", "eps": e},
              "projections": {role: family}}       roles qkv, o, gate_up, down (routed: and router)
Every projection family's N and K must be what the layer's sizes make them (qkv N = (heads + 2 kv_heads) x
head_dim, K = hidden; o N = hidden, K = heads x head_dim; gate_up N = 2 x intermediate, K = hidden; down N = hidden,
K = intermediate; router N = experts, K = hidden): one place per fact, and the two descriptions cannot drift apart.
The layer is not part of the workload's fingerprint (Workload.fingerprint covers what the projection shapes measure
and score, which plans record), so declaring a layer leaves every plan tuned for the workload valid.
"""
from __future__ import annotations

from dataclasses import dataclass

ROLES_GATED = ("qkv", "o", "gate_up", "down")
ROLES_ROUTED = ROLES_GATED + ("router",)
MLP_KINDS = ("gated", "routed")
ACTIVATIONS = ("silu",)
NORMS = ("rmsnorm",)
# Sanity limits (a typo fails when the file is read, not as an allocation on the GPU): public decoder layers have
# at most a few hundred heads of at most 256 dims, contexts up to ~1M tokens, ~100 layers, a few hundred experts.
MAX_HEADS = 1024
MAX_HEAD_DIM = 1024
MAX_CONTEXT = 1 << 20
MAX_CONTEXTS = 16
MAX_MODEL_LAYERS = 1024
MAX_EXPERTS = 4096

TOP_REQUIRED = ("source", "hidden", "model_layers", "attention", "mlp", "norm", "projections")
TOP_OPTIONAL = ("assumed", "note")
ATTENTION_REQUIRED = ("heads", "kv_heads", "head_dim", "context", "rope_theta")
MLP_REQUIRED = {"gated": ("kind", "intermediate", "activation"),
                "routed": ("kind", "experts", "top_k", "intermediate", "activation")}
NORM_REQUIRED = ("kind", "eps")


@dataclass(frozen=True)
class DecoderLayer:
    """A validated "layer" section, with the sizes every step computation needs."""

    hidden: int
    model_layers: int
    heads: int
    kv_heads: int
    head_dim: int
    contexts: tuple[int, ...]
    rope_theta: float
    mlp: str
    intermediate: int
    experts: int | None
    top_k: int | None
    norm_eps: float
    projections: dict          # role -> family name
    source: str
    assumed: str | None

    @property
    def q_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    def family(self, role: str) -> str:
        return self.projections[role]

    def to_dict(self) -> dict:
        return {"hidden": self.hidden, "model_layers": self.model_layers, "heads": self.heads,
                "kv_heads": self.kv_heads, "head_dim": self.head_dim, "contexts": list(self.contexts),
                "rope_theta": self.rope_theta, "mlp": self.mlp, "intermediate": self.intermediate,
                "experts": self.experts, "top_k": self.top_k, "norm_eps": self.norm_eps,
                "projections": dict(self.projections)}


def layer_of(workload) -> DecoderLayer | None:
    """The workload's decoder layer (its spec was validated when the workload was built), or None."""
    spec = workload.spec.get("layer")
    if spec is None:
        return None
    att, mlp = spec["attention"], spec["mlp"]
    return DecoderLayer(hidden=spec["hidden"], model_layers=spec["model_layers"], heads=att["heads"],
                        kv_heads=att["kv_heads"], head_dim=att["head_dim"], contexts=tuple(att["context"]),
                        rope_theta=float(att["rope_theta"]), mlp=mlp["kind"], intermediate=mlp["intermediate"],
                        experts=mlp.get("experts"), top_k=mlp.get("top_k"), norm_eps=float(spec["norm"]["eps"]),
                        projections=dict(spec["projections"]), source=spec["source"], assumed=spec.get("assumed"))


def _expected_sizes(spec: dict) -> dict[str, tuple[int, int]]:
    """role -> (N, K) the layer's sizes give its projection."""
    att, mlp, hidden = spec["attention"], spec["mlp"], spec["hidden"]
    sizes = {"qkv": ((att["heads"] + 2 * att["kv_heads"]) * att["head_dim"], hidden),
             "o": (hidden, att["heads"] * att["head_dim"]),
             "gate_up": (2 * mlp["intermediate"], hidden),
             "down": (hidden, mlp["intermediate"])}
    if mlp["kind"] == "routed":
        sizes["router"] = (mlp["experts"], hidden)
    return sizes


def check_layer(c, layer, families) -> None:
    """Note every problem of a "layer" section on the checker `c` (datasets.workload_spec._Checker); `families` is
    the workload's families object (sizes are compared only where it is well-formed)."""
    from datasets.workload_spec import _Bad

    if not isinstance(layer, dict):
        c.fail("layer", f"expected an object (the decoder layer), got {layer!r}"[:200])
    before = len(c.problems)
    with c.part():   # unknown and missing keys noted; the keys that are there are still checked below
        c.record(layer, "layer", TOP_REQUIRED, TOP_OPTIONAL)
    for key in ("source", *TOP_OPTIONAL):
        with c.part():
            if key in layer:
                c.text(layer[key], f"layer.{key}")
    with c.part():
        if "hidden" in layer:
            c.count(layer["hidden"], "layer.hidden", 1 << 20)
    with c.part():
        if "model_layers" in layer:
            c.count(layer["model_layers"], "layer.model_layers", MAX_MODEL_LAYERS)
    with c.part():
        if "attention" in layer:
            _check_attention(c, layer["attention"])
    with c.part():
        if "mlp" in layer:
            _check_mlp(c, layer["mlp"])
    with c.part():
        if "norm" in layer:
            norm = c.record(layer["norm"], "layer.norm", NORM_REQUIRED, ())
            with c.part():
                if norm["kind"] not in NORMS:
                    c.fail("layer.norm.kind", f"expected one of {', '.join(NORMS)}, got {norm['kind']!r}")
            with c.part():
                c.number(norm["eps"], "layer.norm.eps", below=1)
    routed = isinstance(layer.get("mlp"), dict) and layer["mlp"].get("kind") == "routed"
    with c.part():
        if "projections" in layer:
            projections = c.record(layer["projections"], "layer.projections", ROLES_ROUTED if routed else ROLES_GATED,
                                   ())
            if len(c.problems) != before:
                raise _Bad   # sizes from broken numbers would only repeat the problems above
            _check_projections(c, projections, _expected_sizes(layer), families)


def _check_attention(c, att) -> None:
    c.record(att, "layer.attention", ATTENTION_REQUIRED, ("note",))
    heads = kv = None
    with c.part():
        heads = c.count(att["heads"], "layer.attention.heads", MAX_HEADS)
    with c.part():
        kv = c.count(att["kv_heads"], "layer.attention.kv_heads", MAX_HEADS)
    with c.part():
        dim = c.count(att["head_dim"], "layer.attention.head_dim", MAX_HEAD_DIM)
        if dim % 2:
            c.fail("layer.attention.head_dim", f"{dim} is odd; rotary embedding turns pairs of dimensions")
    with c.part():
        c.number(att["rope_theta"], "layer.attention.rope_theta")
    with c.part():
        if "note" in att:
            c.text(att["note"], "layer.attention.note")
    with c.part():
        if heads is not None and kv is not None and heads % kv:
            c.fail("layer.attention.kv_heads", f"{kv} does not divide heads {heads} (each KV head serves a whole "
                                               "group of query heads)")
    with c.part():
        contexts = att["context"]
        if not isinstance(contexts, list) or not contexts or len(contexts) > MAX_CONTEXTS:
            c.fail("layer.attention.context", f"expected a list of 1 to {MAX_CONTEXTS} context lengths (tokens in "
                                              f"the KV cache), got {contexts!r}"[:200])
        seen = set()
        for i, n in enumerate(contexts):
            with c.part():
                c.count(n, f"layer.attention.context[{i}]", MAX_CONTEXT)
                if n in seen:
                    c.fail(f"layer.attention.context[{i}]", f"duplicate context length {n}")
                seen.add(n)


def _check_mlp(c, mlp) -> None:
    if not isinstance(mlp, dict) or mlp.get("kind") not in MLP_KINDS:
        kind = mlp.get("kind") if isinstance(mlp, dict) else mlp
        c.fail("layer.mlp.kind" if isinstance(mlp, dict) else "layer.mlp",
               f"expected one of {', '.join(MLP_KINDS)} (a gated dense MLP or routed experts), got {kind!r}"[:200])
    c.record(mlp, "layer.mlp", MLP_REQUIRED[mlp["kind"]], ("note", "shared_experts"))
    with c.part():
        c.count(mlp["intermediate"], "layer.mlp.intermediate", 1 << 20)
    with c.part():
        if mlp["activation"] not in ACTIVATIONS:
            c.fail("layer.mlp.activation", f"expected one of {', '.join(ACTIVATIONS)} (act(gate) * up), got "
                                           f"{mlp['activation']!r}"[:200])
    if mlp["kind"] == "routed":
        experts = None
        with c.part():
            experts = c.count(mlp["experts"], "layer.mlp.experts", MAX_EXPERTS)
        with c.part():
            k = c.count(mlp["top_k"], "layer.mlp.top_k", MAX_EXPERTS)
            if experts is not None and k > experts:
                c.fail("layer.mlp.top_k", f"{k} is more than the {experts} experts")
        with c.part():
            if "shared_experts" in mlp:
                c.count(mlp["shared_experts"], "layer.mlp.shared_experts", MAX_EXPERTS)


def _check_projections(c, projections: dict, sizes: dict, families) -> None:
    """Each role names a family of the workload whose N and K are the layer's, with one N at every M and one
    activation dtype (what the step passes from one matmul to the next)."""
    if not isinstance(families, dict):
        return
    used = {}
    for role, family in projections.items():
        where = f"layer.projections.{role}"
        with c.part():
            if not isinstance(family, str) or family not in families:
                c.fail(where, f"{family!r} is not a family of the workload ({', '.join(map(str, families))})"[:240])
            if family in used:
                c.fail(where, f"family {family!r} is already the {used[family]} projection; each matmul is its own "
                              "family")
            used[family] = role
            rec = families[family]
            if not isinstance(rec, dict):
                continue
            N, K = sizes[role]
            if (rec.get("N"), rec.get("K")) != (N, K):
                c.fail(where, f"family {family!r} is N={rec.get('N')!r} K={rec.get('K')!r}, but the layer's sizes "
                              f"make the {role} projection N={N} K={K}")
            if rec.get("N_by_M"):
                c.fail(where, f"family {family!r} has N_by_M: a layer's {role} projection has one N at every batch")
            if role != "router" and not (rec.get("x_dtype") == rec.get("w_dtype") == rec.get("y_dtype")):
                c.fail(where, f"family {family!r} has dtypes x {rec.get('x_dtype')!r}, w {rec.get('w_dtype')!r}, y "
                              f"{rec.get('y_dtype')!r}; the step passes one activation dtype between its matmuls")
    dtypes = {families[f].get("x_dtype") for r, f in projections.items()
              if r != "router" and isinstance(f, str) and isinstance(families.get(f), dict)}
    if len(dtypes) > 1:
        with c.part():
            c.fail("layer.projections", f"the families use activation dtypes {sorted(map(str, dtypes))}; the step "
                                        "runs in one")
