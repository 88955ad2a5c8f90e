"""One decode step of a declared decoder layer (datasets.layer_spec), built from distinct layers, with its projections
taken from a candidate: the code the step task (profiler/worker/step_task.py) times for every candidate alike.

    StepModel(layer, families, batch, context, n_layers, device, seed)
        .weights[l][role]           the projection weights of layer l (distinct per layer: seed + layer)
        .forward(x, project, mark=None, write_cache=True) -> hidden after n_layers
            project(l, role, h) -> h @ w[l][role]^T: the candidate's run() (or the reference's exact product)
            mark(label): called before each segment of the step (the breakdown's markers); None when timed
        SEGMENT_CLASS[label]        the breakdown class of each label mark() is called with
        .input(k) -> x              the k-th step input [batch, hidden] (seeded)

Per layer, as Llama-style decoders run it (the operations unfused, as plain torch):
    h = rmsnorm(x) ; qkv = h @ Wqkv^T ; q, k, v split ; q, k rotated (rotary at position `context`)
    k, v written into the KV cache at slot `context` ; attention of the batch's query heads over context + 1 keys
    (grouped-query: kv_heads groups of heads / kv_heads query rows, torch's scaled_dot_product_attention)
    x = x + attn @ Wo^T ; h = rmsnorm(x) ; gate, up = h @ Wgate_up^T halves ; x = x + (silu(gate) * up) @ Wdown^T
The cache holds `context` seeded tokens per layer and sequence; each step writes the new token's k, v into slot
`context` before reading, so every replay computes the same thing from the same input. The check's reference
(StepModel.reference) is this same step with every projection the contract's reference (the FP64 product rounded to
the output dtype); it never writes the cache (write_cache=False: the new k, v are concatenated to the cached ones),
so it cannot change what a timed graph reads.
"""
from __future__ import annotations

import math

from profiler.check.inputs import as_dtype, make_weight

# Segment classes of the step's breakdown (the stacked bar's parts besides the projection families).
ATTENTION, NORM_ACT, REST = "attention", "norms_activations", "rest"
NON_PROJECTION = (ATTENTION, NORM_ACT, REST)
# mark() labels -> the class their time counts to (a projection's label is its role; the role's family is the class)
SEGMENT_CLASS = {"attn_norm": NORM_ACT, "rotary": NORM_ACT, "attention": ATTENTION, "residual": REST,
                 "mlp_norm": NORM_ACT, "silu_mul": NORM_ACT}
LAYER_SEED_STRIDE = 1000   # layer l's projection weights use seed + 1000 l + role index: distinct in every layer
CACHE_SEED = 7_919         # the KV cache's values: another stream than any weight's or input's


def _torch():
    import torch

    return torch


class StepModel:
    def __init__(self, layer, families: dict, batch: int, context: int, n_layers: int, device, seed: int = 0):
        torch = _torch()
        if layer.mlp != "gated":
            raise ValueError(f"the step measures a gated dense MLP; this layer's MLP is {layer.mlp!r} (routed "
                             "experts are declared, not measured)")
        self.layer, self.batch, self.context, self.n_layers = layer, int(batch), int(context), int(n_layers)
        self.device = torch.device(device)
        qkv_family = families[layer.family("qkv")]
        self.dtype = as_dtype(qkv_family["x_dtype"])
        self.families = {role: layer.family(role) for role in ("qkv", "o", "gate_up", "down")}
        self.seed = int(seed)
        self.weights = []
        for l in range(self.n_layers):
            per = {}
            for r, (role, family) in enumerate(self.families.items()):
                rec = families[family]
                per[role] = make_weight(family, int(rec["N"]), int(rec["K"]), self.seed + LAYER_SEED_STRIDE * l + r,
                                        self.device, dtype=rec["w_dtype"])
            self.weights.append(per)
        g = torch.Generator(device=self.device).manual_seed(self.seed + CACHE_SEED)
        shape = (self.batch, layer.kv_heads, self.context + 1, layer.head_dim)
        self.k_cache = [torch.randn(shape, generator=g, device=self.device).to(self.dtype) for _ in range(n_layers)]
        self.v_cache = [torch.randn(shape, generator=g, device=self.device).to(self.dtype) for _ in range(n_layers)]
        # RMSNorm weights near 1 (a trained model's are O(1)); distinct per layer and norm
        self.norm_w = [(1.0 + 0.1 * torch.randn(2, layer.hidden, generator=g, device=self.device)).to(self.dtype)
                       for _ in range(n_layers)]
        half = layer.head_dim // 2
        inv_freq = 1.0 / (layer.rope_theta ** (torch.arange(0, half, device=self.device, dtype=torch.float64) / half))
        angle = float(self.context) * inv_freq   # the new token's position: after `context` cached tokens
        self.cos = torch.cat([angle.cos(), angle.cos()]).float()
        self.sin = torch.cat([angle.sin(), angle.sin()]).float()

    # -- inputs -----------------------------------------------------------------------------------------------
    def input(self, k: int):
        torch = _torch()
        g = torch.Generator(device=self.device).manual_seed(self.seed + 31 * (k + 1))
        return torch.randn(self.batch, self.layer.hidden, generator=g, device=self.device).to(self.dtype)

    # -- the pieces -------------------------------------------------------------------------------------------
    def _rmsnorm(self, x, w, dtype):
        torch = _torch()
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.layer.norm_eps)
        return (y * w.float()).to(dtype)

    def _rotary(self, t, dtype):
        """Rotate-half rotary embedding at the new token's position, in FP32, back to `dtype`."""
        torch = _torch()
        tf = t.float()
        half = tf.shape[-1] // 2
        rotated = torch.cat([-tf[..., half:], tf[..., :half]], dim=-1)
        return (tf * self.cos + rotated * self.sin).to(dtype)

    def _attention(self, l: int, q, k, v, write_cache: bool):
        """Decode attention of q [B, heads, D] over the cache's `context` tokens and the new k, v [B, kv, D]:
        grouped-query, each KV head's group of query heads as that head's query rows (no copy of the cache)."""
        torch = _torch()
        F = torch.nn.functional
        lay, B, T = self.layer, self.batch, self.context
        group = lay.heads // lay.kv_heads
        if not write_cache:
            keys = torch.cat([self.k_cache[l][:, :, :T], k.to(self.dtype)[:, :, None]], dim=2)
            values = torch.cat([self.v_cache[l][:, :, :T], v.to(self.dtype)[:, :, None]], dim=2)
        else:
            self.k_cache[l][:, :, T].copy_(k)
            self.v_cache[l][:, :, T].copy_(v)
            keys, values = self.k_cache[l], self.v_cache[l]
        queries = q.view(B, lay.kv_heads, group, lay.head_dim).to(keys.dtype)
        out = F.scaled_dot_product_attention(queries, keys, values, scale=1.0 / math.sqrt(lay.head_dim))
        return out.reshape(B, lay.heads * lay.head_dim)

    # -- the step ---------------------------------------------------------------------------------------------
    def forward(self, x, project, mark=None, write_cache: bool = True):
        """The step's output (hidden after n_layers) from input x [batch, hidden]; see the module docstring."""
        torch = _torch()
        F = torch.nn.functional
        lay, B = self.layer, self.batch
        dtype = self.dtype
        mark = mark or (lambda label: None)
        x = x.to(dtype)
        for l in range(self.n_layers):
            mark("attn_norm")
            h = self._rmsnorm(x, self.norm_w[l][0], dtype)
            mark("qkv")
            qkv = project(l, "qkv", h)
            mark("rotary")
            q, k, v = qkv.split([lay.q_width, lay.kv_width, lay.kv_width], dim=-1)
            q = self._rotary(q.reshape(B, lay.heads, lay.head_dim), dtype)
            k = self._rotary(k.reshape(B, lay.kv_heads, lay.head_dim), dtype)
            v = v.reshape(B, lay.kv_heads, lay.head_dim)
            mark("attention")
            attn = self._attention(l, q, k, v, write_cache).to(dtype)
            mark("o")
            o = project(l, "o", attn)
            mark("residual")
            x = x + o
            mark("mlp_norm")
            h = self._rmsnorm(x, self.norm_w[l][1], dtype)
            mark("gate_up")
            gu = project(l, "gate_up", h)
            mark("silu_mul")
            gate, up = gu.split([lay.intermediate, lay.intermediate], dim=-1)
            a = F.silu(gate) * up
            mark("down")
            d = project(l, "down", a)
            mark("residual")
            x = x + d
        return x

    def reference(self, x):
        """The check's reference: this step with every projection the contract's reference (the FP64 product
        rounded to the output dtype), from the same weights, cache and input; the cache is read, never written."""
        def exact(l, role, h):
            w = self.weights[l][role]
            return (h.double() @ w.double().T).to(self.dtype)
        return self.forward(x, exact, write_cache=False)

    def projection_bytes(self) -> int:
        return sum(w.numel() * w.element_size() for per in self.weights for w in per.values())
