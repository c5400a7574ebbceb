"""Checkpoint formats: recognise one from its keys and rename its tensors to our model's (timm's) key names.

Every format has a pure ``*_filter_fn(state_dict) -> state_dict`` driven by an explicit swap table of
(regex, replacement) pairs applied in order, as timm's ``checkpoint_filter_fn`` does. Tensors that need
more than a rename (Google's JAX kernels, Hugging Face's separate q/k/v, CLIP's (D,) class embedding and
(in, out) projections) are reshaped right after.
Keys a filter does not understand are passed through unchanged, so strict loading reports them.

A CLIP checkpoint's text tower (OpenAI, open_clip, Hugging Face) comes out under ``text.``: the loader
builds ``vit.clip.TextTransformer`` from those keys and the image tower from the rest.
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch
import torch.nn.functional as F

Swaps = list[tuple[str, str]]

TIMM_SWAPS: Swaps = [
    (r"^module\.", ""),                       # saved from DataParallel/DistributedDataParallel
    (r"^pre_logits\.fc\.", "pre_logits.0."),  # timm < 0.9 representation layer (ImageNet-21k ViTs)
    (r"^(blocks\.\d+)\.gamma_([12])$", r"\1.ls\2.gamma"),  # BEiT / EVA layer scale
    (r"\.attn\.(q|k|v)_proj\.", r".attn.\1."),  # EVA-02 with separate q/k/v (fused into attn.qkv below)
    (r"\.attn\.rel_pos\.relative_position_bias_table$", ".attn.relative_position_bias_table"),  # relpos, table kind
]
TIMM_DROP = [r"relative_position_index$"]  # BEiT: a buffer some versions saved, recomputed from the grid
# timm's NaFlexViT: the patch embedding, tokens and position table live in one ``embeds`` module; the patch projection
# is a Linear over flattened (P, P, C) patches (made a convolution below), the table a (1, h, w, D) grid.
NAFLEX_SWAPS: Swaps = [
    (r"^module\.", ""),
    (r"^embeds\.proj\.", "patch_embed.proj."),
    (r"^embeds\.(cls_token|reg_token|pos_embed)$", r"\1"),
]
DINO_SWAPS: Swaps = [
    (r"^module\.", ""),
    (r"^backbone\.", ""),                     # DINO training checkpoints wrap the ViT as .backbone
]
DINO_DROP = [r"^head\.(mlp|last_layer)\.", r"^mask_token$"]  # DINO projection head, iBOT mask token: not the ViT
TORCHVISION_SWAPS: Swaps = [
    (r"^class_token$", "cls_token"),
    (r"^conv_proj\.", "patch_embed.proj."),
    (r"^encoder\.pos_embedding$", "pos_embed"),
    (r"^encoder\.layers\.encoder_layer_(\d+)\.", r"blocks.\1."),
    (r"\.ln_1\.", ".norm1."),
    (r"\.ln_2\.", ".norm2."),
    (r"\.self_attention\.in_proj_(weight|bias)$", r".attn.qkv.\1"),  # rows [q; k; v], each head-major: timm's qkv
    (r"\.self_attention\.out_proj\.", ".attn.proj."),
    (r"\.mlp\.(0|linear_1)\.", ".mlp.fc1."),  # MLPBlock = Linear, GELU, Dropout, Linear, Dropout (linear_1: torchvision < 0.13)
    (r"\.mlp\.(3|linear_2)\.", ".mlp.fc2."),
    (r"^encoder\.ln\.", "norm."),
    (r"^heads\.pre_logits\.", "pre_logits.0."),
    (r"^heads\.head\.", "head."),
]
HF_PREFIXES = r"(vit|deit|beit|data2vec_vision|dinov2|dinov2_with_registers|ijepa)"  # base_model_prefix of each class
HF_SWAPS: Swaps = [
    (rf"^{HF_PREFIXES}\.", ""),
    (r"^encoder\.relative_position_bias\.relative_position_bias_table$",  # BEiT pre-training: one table for all
     "shared_relative_position_bias_table"),                                 # blocks, copied to each below
    (r"(\.attention\.attention)?\.relative_position_bias\.relative_position_bias_table$",
     ".attn.relative_position_bias_table"),                  # BEiT, file layout / transformers >= 5 in-memory
    (r"\.lambda_([12])$", r".ls\1.gamma"),                    # BEiT layer scale
    (r"^pooler\.layernorm\.", "fc_norm."),                    # BEiT: LayerNorm after the mean of patch tokens
    (r"^embeddings\.cls_token$", "cls_token"),
    (r"^embeddings\.distillation_token$", "dist_token"),
    (r"^embeddings\.register_tokens$", "reg_token"),         # DINOv2 with registers
    (r"^embeddings\.position_embeddings$", "pos_embed"),
    (r"^embeddings\.patch_embeddings\.projection\.", "patch_embed.proj."),
    (r"^(encoder\.layer|layers)\.(\d+)\.", r"blocks.\2."),  # file layout / transformers >= 5 in-memory layout
    (r"\.layernorm_before\.", ".norm1."),
    (r"\.layernorm_after\.", ".norm2."),
    (r"\.attention\.attention\.(query|key|value)\.", r".attn.\1."),  # fused into attn.qkv below
    (r"\.attention\.(q|k|v)_proj\.", r".attn.\1."),
    (r"\.attention\.(output\.dense|o_proj)\.", ".attn.proj."),
    (r"\.intermediate\.dense\.", ".mlp.fc1."),
    (r"\.output\.dense\.", ".mlp.fc2."),
    (r"\.layer_scale([12])\.lambda1$", r".ls\1.gamma"),       # DINOv2 layer scale
    (r"\.mlp\.weights_in\.", ".mlp.fc1."),                 # DINOv2's SwiGLU, gate first (split below)
    (r"\.mlp\.weights_out\.", ".mlp.fc2."),
    (r"\.mlp\.gate_proj\.", ".mlp.fc1_g."),                # … and its transformers >= 5 in-memory names
    (r"\.mlp\.up_proj\.", ".mlp.fc1_x."),
    (r"\.mlp\.down_proj\.", ".mlp.fc2."),
    (r"^layernorm\.", "norm."),
    (r"^(classifier|cls_classifier)\.", "head."),
    (r"^distillation_classifier\.", "head_dist."),
]
HF_DROP = [rf"^({HF_PREFIXES}\.)?embeddings\.mask_token$",   # unused by classification: the masking token,
           r"^((vit|deit)\.)?pooler\.dense\.",                # ViT's pooler,
           r"relative_position_index$"]                        # a buffer recomputed from the grid
HF_QKV = {"query": "q", "key": "k", "value": "v", "q": "q", "k": "k", "v": "v"}
GOOGLE_PREFIXES = ("opt/target/", "params/img/", "params/", "")
GOOGLE_SWAPS: Swaps = [  # classic (vit_jax) layout; big_vision numbers the sub-modules 0, 0, 1 instead of 1, 3, 2
    (r"^embedding/", "patch_embed.proj/"),
    (r"^cls$", "cls_token"),
    (r"^(Transformer/posembed_input/)?pos_embedding$", "pos_embed"),
    (r"^Transformer/encoderblock_(\d+)/", r"blocks.\1."),
    (r"LayerNorm_0/", "norm1/"),
    (r"MultiHeadDotProductAttention_[01]/(query|key|value)/", r"attn.\1/"),
    (r"MultiHeadDotProductAttention_[01]/out/", "attn.proj/"),
    (r"LayerNorm_[12]/", "norm2/"),
    (r"MlpBlock_[03]/Dense_0/", "mlp.fc1/"),
    (r"MlpBlock_[03]/Dense_1/", "mlp.fc2/"),
    (r"^Transformer/encoder_norm/", "norm/"),
    (r"^pre_logits/", "pre_logits.0/"),
    (r"/(kernel|scale)$", ".weight"),
    (r"/bias$", ".bias"),
]

OPENAI_CLIP_SWAPS: Swaps = [  # OpenAI's released CLIP state dicts and open_clip's (the same layout)
    (r"^module\.", ""),
    (r"^visual\.conv1\.", "patch_embed.proj."),
    (r"^visual\.class_embedding$", "cls_token"),             # (D,), reshaped below
    (r"^visual\.positional_embedding$", "pos_embed"),        # (1 + N, D), reshaped below
    (r"^visual\.ln_pre\.", "norm_pre."),
    (r"^visual\.transformer\.resblocks\.(\d+)\.", r"blocks.\1."),
    (r"^visual\.ln_post\.", "norm."),
    (r"^visual\.fc_norm\.", "fc_norm."),                     # open_clip's final_ln_after_pool (CLIPA), renamed so
    (r"^visual\.proj$", "proj.weight"),                      # (D, E) used as x @ proj, transposed below
    (r"^transformer\.resblocks\.(\d+)\.", r"text.blocks.\1."),
    (r"^token_embedding\.", "text.token_embedding."),
    (r"^positional_embedding$", "text.pos_embed"),
    (r"^ln_final\.", "text.norm."),
    (r"^text_projection$", "text.proj.weight"),               # (W, E), transposed below
    (r"^logit_scale$", "text.logit_scale"),
    (r"\.ln_1\.", ".norm1."),
    (r"\.ln_2\.", ".norm2."),
    (r"\.attn\.in_proj_(weight|bias)$", r".attn.qkv.\1"),    # nn.MultiheadAttention: rows [q; k; v]
    (r"\.attn\.out_proj\.", ".attn.proj."),
    (r"\.mlp\.c_fc\.", ".mlp.fc1."),
    (r"\.mlp\.c_proj\.", ".mlp.fc2."),
]
OPENAI_CLIP_DROP = [r"^(input_resolution|context_length|vocab_size)$", r"attn_mask$"]  # JIT metadata, causal mask
HF_CLIP_SWAPS: Swaps = [  # Hugging Face CLIPModel / CLIPVisionModel(WithProjection) / SiglipVisionModel
    (r"^text_model\.embeddings\.token_embedding\.", "text.token_embedding."),
    (r"^text_model\.embeddings\.position_embedding\.weight$", "text.pos_embed"),
    (r"^text_model\.encoder\.layers\.(\d+)\.", r"text.blocks.\1."),
    (r"^text_model\.final_layer_norm\.", "text.norm."),
    (r"^text_projection\.", "text.proj."),
    (r"^logit_scale$", "text.logit_scale"),
    (r"^(vision_model\.)?embeddings\.class_embedding$", "cls_token"),          # (D,), reshaped below
    (r"^(vision_model\.)?embeddings\.patch_embedding\.", "patch_embed.proj."),
    (r"^(vision_model\.)?embeddings\.position_embedding\.weight$", "pos_embed"),  # (T, D), reshaped below
    (r"^(vision_model\.)?pre_layrnorm\.", "norm_pre."),                       # sic
    (r"^(vision_model\.)?encoder\.layers\.(\d+)\.", r"blocks.\2."),
    (r"^(vision_model\.)?post_layernorm\.", "norm."),
    (r"^visual_projection\.", "proj."),
    (r"^(vision_model\.)?head\.probe$", "attn_pool.latent"),                  # SigLIP's MAP head
    (r"^(vision_model\.)?head\.attention\.in_proj_(weight|bias)$", r"attn_pool.in_proj.\2"),  # split below
    (r"^(vision_model\.)?head\.attention\.out_proj\.", "attn_pool.proj."),
    (r"^(vision_model\.)?head\.layernorm\.", "attn_pool.norm."),
    (r"^(vision_model\.)?head\.mlp\.", "attn_pool.mlp."),
    (r"\.layer_norm1\.", ".norm1."),
    (r"\.layer_norm2\.", ".norm2."),
    (r"\.self_attn\.(q|k|v)_proj\.", r".attn.\1."),       # fused into attn.qkv below
    (r"\.self_attn\.out_proj\.", ".attn.proj."),
]
HF_CLIP_DROP = [r"position_ids$"]  # a buffer older transformers saved
META_DINOV3_SWAPS: Swaps = [  # facebookresearch/dinov3's DinoVisionTransformer (its hub files, a teacher's backbone)
    (r"^module\.", ""),
    (r"^backbone\.", ""),
    (r"^storage_tokens$", "reg_token"),                     # its registers
    (r"\.mlp\.w1\.", ".mlp.fc1_g."),                        # SwiGLUFFN: silu(w1 x) · w2 x -> w3
    (r"\.mlp\.w2\.", ".mlp.fc1_x."),
    (r"\.mlp\.w3\.", ".mlp.fc2."),
]
# the pre-training mask token, the norm of local crops' CLS (training only), the RoPE periods (recomputed, checked
# by vit.checkpoints.families), the training heads of a full checkpoint
META_DINOV3_DROP = [r"(^|\.)mask_token$", r"^(module\.)?(backbone\.)?local_cls_norm\.", r"rope_embed\.periods$",
                    r"^(module\.)?(dino_head|ibot_head|dino_loss|ibot_patch_loss)\."]
HF_DINOV3_SWAPS: Swaps = [  # transformers' DINOv3ViTModel / DINOv3ViTBackbone
    (r"^model\.layer\.", "layer."),                          # transformers >= 5 in-memory -> file layout
    (r"^embeddings\.cls_token$", "cls_token"),
    (r"^embeddings\.register_tokens$", "reg_token"),
    (r"^embeddings\.patch_embeddings\.", "patch_embed.proj."),
    (r"^layer\.(\d+)\.", r"blocks.\1."),
    (r"\.attention\.(q|k|v)_proj\.", r".attn.\1."),       # fused into attn.qkv below
    (r"\.attention\.o_proj\.", ".attn.proj."),
    (r"\.layer_scale([12])\.lambda1$", r".ls\1.gamma"),
    (r"\.mlp\.gate_proj\.", ".mlp.fc1_g."),                 # gated: silu(gate) · up -> down
    (r"\.mlp\.down_proj\.", ".mlp.fc2."),                   # up_proj: fc1_x beside a gate, else fc1 (below)
]
HF_DINOV3_DROP = [r"^embeddings\.mask_token$", r"inv_freq$"]
HF_AIMV2_SWAPS: Swaps = [  # transformers' Aimv2VisionModel (and Aimv2Model's image tower, vision_model.)
    (r"^vision_model\.", ""),
    (r"^embeddings\.patch_embed\.", "patch_embed.proj."),
    (r"^embeddings\.rms_norm\.", "patch_embed.norm."),
    (r"^embeddings\.position_embedding\.weight$", "pos_embed"),       # (N, D), reshaped below
    (r"^encoder\.layers\.(\d+)\.", r"blocks.\1."),
    (r"\.attention\.(q|k|v)_proj\.", r".attn.\1."),                   # fused into attn.qkv below
    (r"\.attention\.out_proj\.", ".attn.proj."),
    (r"\.ffn\.gate_proj\.", ".mlp.fc1_g."),
    (r"\.ffn\.up_proj\.", ".mlp.fc1_x."),
    (r"\.ffn\.down_proj\.", ".mlp.fc2."),
    (r"\.rms_norm([12])\.", r".norm\1."),
    (r"^rms_norm\.", "norm."),
    (r"^head\.cls_token$", "attn_pool.latent"),                       # its head: the probe is the query
    (r"^head\.(k|v)_proj\.", r"attn_pool.\1."),                       # stacked into attn_pool.kv below
    (r"^head\.output_proj\.", "attn_pool.proj."),
    (r"^visual_projection\.", "proj."),                              # Aimv2Model: into the image–text space
]
HF_AIMV2_DROP = [r"position_ids$", r"^(text_model|text_projection|logit_scale)"]
OPEN_CLIP_TIMM_SWAPS: Swaps = [  # open_clip's TimmModel (SigLIP, SigLIP 2): the timm model is its image tower's trunk
    (r"^module\.", ""),
    (r"^visual\.trunk\.", ""),
    (r"^visual\.head\.proj\.", "proj."),                   # timm_proj "linear" (bias-free)
]
OPEN_CLIP_TIMM_DROP = [r"^(?!(module\.)?visual\.)"]  # the text tower (SigLIP's is not CLIP's), logit scale, bias


def swap_keys(state_dict: dict, swaps: Swaps, drop: list[str] = ()) -> dict:
    """Rename every key through the swap table, in order; drop keys matching a ``drop`` pattern."""
    out = {}
    for k, v in state_dict.items():
        if any(re.search(p, k) for p in drop):
            continue
        for pattern, repl in swaps:
            k = re.sub(pattern, repl, k)
        out[k] = v
    return out


def timm_filter_fn(state_dict: dict) -> dict:
    """timm's ViT (its CLIP and SigLIP towers, relative-position and parallel-block ViTs too), EVA-02, BEiT, DINOv3
    and RoPE ViTs -> ours."""
    sd = _share_rel_pos(_fold_parallel(_split_mixed_rope(swap_keys(state_dict, TIMM_SWAPS, TIMM_DROP))))
    return _timm_clip_projection(_split_glu(_fuse_qkv(_prefix_rows(sd))))


def _prefix_rows(sd: dict) -> dict:
    """timm's relpos table (``rel_pos_type='bias'``) has BEiT's 3 prefix rows only with a CLS token: without one,
    (2gh-1)(2gw-1) rows, an odd square, get 3 zero rows (never read: there is no prefix token)."""
    out = dict(sd)
    for k, t in sd.items():
        if k.endswith("attn.relative_position_bias_table") and math.isqrt(t.shape[0]) ** 2 == t.shape[0]:
            out[k] = torch.cat([t, t.new_zeros(3, t.shape[1])])
    return out


def naflex_filter_fn(state_dict: dict) -> dict:
    """timm's NaFlexViT -> ours: the ``embeds`` module's tensors renamed, the Linear patch projection made the
    convolution it equals, the (1, h, w, D) position grid flattened row-major; the blocks are timm's ViT blocks."""
    sd = swap_keys(state_dict, NAFLEX_SWAPS)
    table = sd.get("pos_embed")
    if table is not None and table.ndim == 4:                        # (1, h, w, D) -> (1, h·w, D)
        sd["pos_embed"] = table.flatten(1, 2)
    return timm_filter_fn(_conv_patch_embed(sd, channels_last=True))


def _conv_patch_embed(sd: dict, channels_last: bool) -> dict:
    """A patch projection stored as a Linear over flattened patches, (D, P·P·C), -> the Conv2d weight (D, C, P, P)
    that computes the same (SigLIP 2's NaFlex tower and timm's NaFlexViT flatten each patch as (P, P, C), channels
    last; C = 3, RGB)."""
    w = sd.get("patch_embed.proj.weight")
    if w is None or w.ndim != 2:
        return sd
    D, n = w.shape
    P = math.isqrt(n // 3)
    if 3 * P * P != n:
        raise ValueError(f"The patch projection has {n} inputs per patch, which is not P·P·3 for RGB patches of a "
                         f"square side P! Expected e.g. 768 (16×16×3).")
    conv = w.reshape(D, P, P, 3).permute(0, 3, 1, 2) if channels_last else w.reshape(D, 3, P, P)
    return {**sd, "patch_embed.proj.weight": conv.contiguous()}


def _share_rel_pos(sd: dict) -> dict:
    """timm's vit_srelpos_*: one relative-position MLP shared by every block (``shared_rel_pos.mlp.*``) -> the same
    tensors in every block's ``attn.rel_pos.mlp`` (the function is the same; each block then holds its copy)."""
    shared = {k: v for k, v in sd.items() if k.startswith("shared_rel_pos.")}
    if not shared:
        return sd
    out = {k: v for k, v in sd.items() if k not in shared}
    blocks = sorted({int(m[1]) for k in sd if (m := re.match(r"blocks\.(\d+)\.", k))})
    for i in blocks:
        for k, v in shared.items():
            out[f"blocks.{i}.attn.rel_pos.{k.removeprefix('shared_rel_pos.')}"] = v
    return out


def _fold_parallel(sd: dict) -> dict:
    """timm's parallel blocks (ParallelThingsBlock, ``*_18x2``): x + Σⱼ lsⱼ(attnⱼ(normⱼ(x))), then the same with the
    MLPs, -> one block of ours with the branches side by side: attention branch j's H heads become heads j·H … j·H+H−1
    (qkv rows stacked per q, k, v; proj columns side by side), MLP branch j's units units j·M … of one MLP.

    Each branch reads its own LayerNorm; only the affine part differs between them, so it is folded into the
    projection that reads it, W·(γ ⊙ n + β) + b = (W·diag γ)·n + (W·β + b), and the block's norms become plain
    normalisations (weight 1, bias 0); each branch's LayerScale is folded into its output projection the same way.
    The function is the same (computed in float64, then stored in the checkpoint's dtype). Tensors of a branch that
    has more than norm, attn / mlp and ls are passed through for strict loading to name."""
    found = {int(m[1]) for k in sd if (m := re.match(r"blocks\.(\d+)\.attns\.\d+\.", k))}
    if not found:
        return sd
    out = dict(sd)
    for i in sorted(found):
        b = f"blocks.{i}"
        n = 1 + max(int(m[1]) for k in sd if (m := re.match(rf"{b}\.attns\.(\d+)\.", k)))
        attn = [_fold_branch(out, f"{b}.attns.{j}", "attn", "qkv", "proj") for j in range(n)]
        mlp = [_fold_branch(out, f"{b}.ffns.{j}", "mlp", "fc1", "fc2") for j in range(n)]
        D = attn[0][2].shape[0]
        q_k_v = [w.chunk(3, dim=0) for w, _, _, _ in attn]
        q_k_v_bias = [bias.chunk(3, dim=0) for _, bias, _, _ in attn]
        out[f"{b}.attn.qkv.weight"] = torch.cat([parts[p] for p in range(3) for parts in q_k_v])
        out[f"{b}.attn.qkv.bias"] = torch.cat([parts[p] for p in range(3) for parts in q_k_v_bias])
        out[f"{b}.attn.proj.weight"] = torch.cat([w for _, _, w, _ in attn], dim=1)
        out[f"{b}.attn.proj.bias"] = sum(bias for _, _, _, bias in attn)
        out[f"{b}.mlp.fc1.weight"] = torch.cat([w for w, _, _, _ in mlp])
        out[f"{b}.mlp.fc1.bias"] = torch.cat([bias for _, bias, _, _ in mlp])
        out[f"{b}.mlp.fc2.weight"] = torch.cat([w for _, _, w, _ in mlp], dim=1)
        out[f"{b}.mlp.fc2.bias"] = sum(bias for _, _, _, bias in mlp)
        dtype = attn[0][0].dtype
        for norm in ("norm1", "norm2"):
            out[f"{b}.{norm}.weight"], out[f"{b}.{norm}.bias"] = torch.ones(D, dtype=dtype), torch.zeros(D, dtype=dtype)
    return out


def _fold_branch(sd: dict, prefix: str, inner: str, into: str, out_of: str):
    """Pop one parallel branch (``prefix``.norm, ``prefix``.``inner``.``into`` / ``out_of``, ``prefix``.ls) from ``sd``
    -> (input weight, input bias, output weight, output bias) with the norm's affine part folded into the input
    projection and the LayerScale into the output one."""
    dtype = sd[f"{prefix}.{inner}.{into}.weight"].dtype
    get = lambda key: None if key not in sd else sd.pop(key).double()        # noqa: E731
    gamma, beta = get(f"{prefix}.norm.weight"), get(f"{prefix}.norm.bias")
    w_in, b_in = get(f"{prefix}.{inner}.{into}.weight"), get(f"{prefix}.{inner}.{into}.bias")
    w_out, b_out = get(f"{prefix}.{inner}.{out_of}.weight"), get(f"{prefix}.{inner}.{out_of}.bias")
    scale = get(f"{prefix}.ls.gamma")
    b_in = torch.zeros(w_in.shape[0], dtype=torch.float64) if b_in is None else b_in
    b_out = torch.zeros(w_out.shape[0], dtype=torch.float64) if b_out is None else b_out
    if beta is not None:
        b_in = b_in + w_in @ beta
    if gamma is not None:
        w_in = w_in * gamma
    if scale is not None:
        w_out, b_out = w_out * scale[:, None], b_out * scale
    return tuple(t.to(dtype) for t in (w_in, b_in, w_out, b_out))



def _split_mixed_rope(sd: dict) -> dict:
    """timm's RoPE-Mixed keeps every block's learnt frequencies in one (2, L, H, Dh/2) tensor, rope.freqs -> each
    block's own blocks.i.attn.rope_freqs (2, H, Dh/2)."""
    freqs = sd.get("rope.freqs")
    if freqs is None or freqs.ndim != 4:
        return sd
    out = {k: v for k, v in sd.items() if k != "rope.freqs"}
    out.update({f"blocks.{i}.attn.rope_freqs": freqs[:, i] for i in range(freqs.shape[1])})
    return out


def meta_dinov3_filter_fn(state_dict: dict) -> dict:
    """facebookresearch/dinov3's ViTs -> ours: registers, SwiGLU, and the masked key bias applied (bias × bias_mask,
    LinearKMaskedBias): with the mask's usual zeros on k, q and v biases (``attn.q_bias``, ``attn.v_bias``)."""
    return _masked_qkv_bias(swap_keys(state_dict, META_DINOV3_SWAPS, META_DINOV3_DROP))


def _masked_qkv_bias(sd: dict) -> dict:
    out = {k: v for k, v in sd.items() if not k.endswith(".attn.qkv.bias_mask")}
    for k in [k for k in sd if k.endswith(".attn.qkv.bias_mask")]:
        prefix, mask = k.removesuffix(".qkv.bias_mask"), sd[k].float()
        bias = out.pop(f"{prefix}.qkv.bias", None)
        if bias is None:
            continue
        if not torch.isfinite(mask).all():
            raise ValueError(f"{k} holds NaN: the file was saved before its key-bias mask was set (DINOv3 fills it "
                             f"with NaN until init_weights). Expected 1 on q and v and 0 on k.")
        bias = bias.float() * mask
        D = bias.shape[0] // 3
        if bool((mask[:D] == 1).all() and (mask[D:2 * D] == 0).all() and (mask[2 * D:] == 1).all()):
            out[f"{prefix}.q_bias"], out[f"{prefix}.v_bias"] = bias[:D], bias[2 * D:]
        else:                                                          # another mask: the masked bias as it is
            out[f"{prefix}.qkv.bias"] = bias
    return out


def huggingface_dinov3_filter_fn(state_dict: dict) -> dict:
    """transformers' DINOv3 ViT -> ours: renames, q/k/v fused (no key bias: q and v biases), the MLP's up_proj as
    the value of a gated MLP or the first layer of a plain one."""
    out = swap_keys(state_dict, HF_DINOV3_SWAPS, HF_DINOV3_DROP)
    if "reg_token" in out and out["reg_token"].numel() == 0:        # num_register_tokens 0: an empty parameter
        del out["reg_token"]
    gated = {m[1] for k in out if (m := re.match(r"(blocks\.\d+)\.mlp\.fc1_g\.", k))}
    renamed = {}
    for k, v in out.items():
        m = re.match(r"(blocks\.\d+)\.mlp\.up_proj\.(weight|bias)$", k)
        renamed[f"{m[1]}.mlp.{'fc1_x' if m[1] in gated else 'fc1'}.{m[2]}" if m else k] = v
    return _fuse_qkv(renamed)


def _timm_clip_projection(sd: dict) -> dict:
    """timm stores a CLIP tower's image projection as its head, with an all-zero bias (``_convert_openai_clip``):
    a CLIP tower (norm_pre) whose head bias is exactly zero gets it back as ``proj``, so that it is not taken for
    a classifier of E "classes". A trained classifier head never has an all-zero bias."""
    bias = sd.get("head.bias")
    if "norm_pre.weight" not in sd or bias is None or "head.weight" not in sd or bool(bias.any()):
        return sd
    out = {k: v for k, v in sd.items() if k not in ("head.weight", "head.bias")}
    out["proj.weight"] = sd["head.weight"]
    return out


def openai_clip_filter_fn(state_dict: dict) -> dict:
    """OpenAI / open_clip CLIP (``visual.*`` image tower, text tower at the top level) -> ours, text under ``text.``."""
    out = swap_keys(state_dict, OPENAI_CLIP_SWAPS, OPENAI_CLIP_DROP)
    return {k: _clip_tensor(k, v, transposed_proj=True) for k, v in out.items()}


def huggingface_clip_filter_fn(state_dict: dict) -> dict:
    """Hugging Face CLIP / SigLIP -> ours: renames, separate q/k/v stacked into attn.qkv, the MAP head's
    in_proj split into q and kv, text tower under ``text.``."""
    out = _conv_patch_embed(_fuse_qkv(swap_keys(state_dict, HF_CLIP_SWAPS, HF_CLIP_DROP)), channels_last=True)
    return _split_probe_in_proj({k: _clip_tensor(k, v, transposed_proj=False) for k, v in out.items()})


def _clip_tensor(key: str, t: torch.Tensor, transposed_proj: bool) -> torch.Tensor:
    """CLIP layouts -> ours: class embedding (D,) -> (1, 1, D); position embedding (T, D) -> (1, T, D); OpenAI's
    projections are used as x @ P with P (in, out), ours are Linear weights (out, in)."""
    if key == "cls_token" and t.ndim == 1:
        return t.reshape(1, 1, -1)
    if key == "pos_embed" and t.ndim == 2:
        return t.unsqueeze(0)
    if transposed_proj and key in ("proj.weight", "text.proj.weight"):
        return t.T
    return t


def _split_probe_in_proj(sd: dict) -> dict:
    """SigLIP's MAP head in Hugging Face is an nn.MultiheadAttention: in_proj rows [q; k; v] (3D, D) ->
    attn_pool.q (D, D) and attn_pool.kv (2D, D), timm's layout."""
    out = dict(sd)
    for kind in ("weight", "bias"):
        t = out.pop(f"attn_pool.in_proj.{kind}", None)
        if t is not None:
            D = t.shape[0] // 3
            out[f"attn_pool.q.{kind}"], out[f"attn_pool.kv.{kind}"] = t[:D], t[D:]
    return out


def _split_glu(sd: dict) -> dict:
    """timm's packed SwiGLU (GluMlp, EVA-02 without the MLP LayerNorm): fc1 (2h, D) whose first half is the gate
    -> fc1_g (h, D) and fc1_x (h, D). Recognised by fc1 being twice as wide as fc2's input; a plain MLP never is."""
    out = dict(sd)
    for k in list(sd):
        m = re.fullmatch(r"(blocks\.\d+\.mlp)\.fc1\.weight", k)
        fc2 = sd.get(f"{m[1]}.fc2.weight") if m else None
        if fc2 is not None and sd[k].shape[0] == 2 * fc2.shape[1]:
            for kind in ("weight", "bias"):
                t = out.pop(f"{m[1]}.fc1.{kind}", None)
                if t is not None:
                    out[f"{m[1]}.fc1_g.{kind}"], out[f"{m[1]}.fc1_x.{kind}"] = t.chunk(2, dim=0)
    return out


def dino_filter_fn(state_dict: dict) -> dict:
    return swap_keys(state_dict, DINO_SWAPS, DINO_DROP)


def torchvision_filter_fn(state_dict: dict) -> dict:
    return swap_keys(state_dict, TORCHVISION_SWAPS)


def huggingface_filter_fn(state_dict: dict) -> dict:
    """Hugging Face ViT/DeiT/BEiT/data2vec-vision/DINOv2/MAE/MSN -> ours: renames, then separate query/key/value
    Linears stacked into attn.qkv, DINOv2's packed SwiGLU split, a shared relative position bias given to each block."""
    out = _split_glu(_fuse_qkv(swap_keys(state_dict, HF_SWAPS, HF_DROP)))
    shared = out.pop("shared_relative_position_bias_table", None)
    if shared is not None:
        blocks = sorted({int(m[1]) for k in out if (m := re.match(r"blocks\.(\d+)\.", k))})
        out.update({f"blocks.{i}.attn.relative_position_bias_table": shared for i in blocks})
    return out


def huggingface_aimv2_filter_fn(state_dict: dict) -> dict:
    """transformers' AIMv2 image tower -> ours: renames, q/k/v fused, the (N, D) table made (1, N, D), the head's
    key and value projections stacked as the probe's kv."""
    sd = _fuse_qkv(swap_keys(state_dict, HF_AIMV2_SWAPS, HF_AIMV2_DROP))
    if "pos_embed" in sd and sd["pos_embed"].ndim == 2:
        sd["pos_embed"] = sd["pos_embed"].unsqueeze(0)
    for kind in ("weight", "bias"):
        k, v = sd.pop(f"attn_pool.k.{kind}", None), sd.pop(f"attn_pool.v.{kind}", None)
        if k is not None and v is not None:
            sd[f"attn_pool.kv.{kind}"] = torch.cat([k, v])
    return sd


def open_clip_timm_filter_fn(state_dict: dict) -> dict:
    """open_clip with a timm image tower -> ours: the trunk's timm keys, its projection; the rest is left out."""
    return timm_filter_fn(swap_keys(state_dict, OPEN_CLIP_TIMM_SWAPS, OPEN_CLIP_TIMM_DROP))


def fuse_qkv(sd: dict, pattern: str, names: dict[str, str] = HF_QKV, joined=None) -> dict:
    """Separate query, key and value tensors -> the fused ones this explorer's blocks hold. A key that matches
    ``pattern`` (its groups: the attention's prefix, the part's name, "weight" or "bias") is one part, ``names``
    mapping its name to q, k or v: prefix.{q,k,v}.kind (D, …) -> prefix.qkv.kind (3D, …); biases on q and v without
    one on k (BEiT, EVA-02, a Swin v2, VideoMAE) -> prefix.q_bias and prefix.v_bias. ``joined(prefix, kind, qkv)``
    may join a complete set its own way (its entries, or None for the rule above). An incomplete set is left for
    strict loading to report."""
    out, parts = {}, {}
    for k, v in sd.items():
        m = re.fullmatch(pattern, k)
        if m and m[2] in names:
            parts.setdefault((m[1], m[3]), {})[names[m[2]]] = v
        else:
            out[k] = v
    for (prefix, kind), qkv in parts.items():
        own = joined(prefix, kind, qkv) if joined is not None and set(qkv) == {"q", "k", "v"} else None
        if own is not None:
            out.update(own)
        elif set(qkv) == {"q", "k", "v"}:
            out[f"{prefix}.qkv.{kind}"] = torch.cat([qkv["q"], qkv["k"], qkv["v"]], dim=0)
        elif kind == "bias" and set(qkv) == {"q", "v"}:
            out[f"{prefix}.q_bias"], out[f"{prefix}.v_bias"] = qkv["q"], qkv["v"]
        else:
            out.update({f"{prefix}.{n}.{kind}": t for n, t in qkv.items()})
    return out


def _fuse_qkv(sd: dict) -> dict:
    """blocks.i.attn.{q,k,v}.{weight,bias} (D, D)/(D,) -> blocks.i.attn.qkv.{weight,bias} (3D, D)/(3D,) (``fuse_qkv``)."""
    return fuse_qkv(sd, r"((?:text\.)?blocks\.\d+\.attn)\.(query|key|value|q|k|v)\.(weight|bias)")


def google_prefix(arrays: dict) -> str:
    for p in GOOGLE_PREFIXES:
        if f"{p}embedding/kernel" in arrays:
            return p
    raise ValueError("Not a Google ViT .npz: no 'embedding/kernel' array.")


def google_num_heads(arrays: dict) -> int:
    """Heads are explicit in Google's layout: query kernels are (D, H, D/H)."""
    p = google_prefix(arrays)
    for k, v in arrays.items():
        if k.startswith(p) and re.search(r"MultiHeadDotProductAttention_[01]/query/kernel$", k):
            return int(v.shape[-2])
    raise ValueError("Google .npz without attention query kernels: cannot tell the number of heads.")


def google_filter_fn(arrays: dict) -> dict:
    """Google's JAX/Flax ViT .npz (vit_jax / big_vision) -> ours.

    Layout (from timm's ``_load_weights``): conv kernel (P, P, C, D) -> (D, C, P, P); Dense kernels (in, out)
    -> (out, in); attention query/key/value kernels (D, H, Dh) -> rows of attn.qkv (3D, D), their biases
    (H, Dh) -> (3D,); out kernel (H, Dh, D) -> (D, H·Dh). Stacked (scanned) blocks are split per layer.
    """
    p = google_prefix(arrays)
    flat = {}
    for k, v in arrays.items():
        k = k[len(p):] if k.startswith(p) else k
        m = re.fullmatch(r"Transformer/encoderblock/(.*)", k)
        if m:  # big_vision scan: one array per parameter with the layer index first
            for i in range(v.shape[0]):
                flat[f"Transformer/encoderblock_{i}/{m[1]}"] = v[i]
        else:
            flat[k] = v
    out = {}
    for k, v in swap_keys(flat, GOOGLE_SWAPS).items():
        out[k] = _google_tensor(k, torch.from_numpy(np.ascontiguousarray(v)).float())
    return _fuse_qkv(out)


def _google_tensor(key: str, t: torch.Tensor) -> torch.Tensor:
    """One JAX array -> PyTorch layout for the (already renamed) key."""
    if key == "patch_embed.proj.weight":
        return t.permute(3, 2, 0, 1)                   # (P, P, C, D) -> (D, C, P, P)
    if re.fullmatch(r"blocks\.\d+\.attn\.(query|key|value)\.weight", key):
        return t.flatten(1).T                          # (D, H, Dh) -> (H·Dh, D)
    if re.fullmatch(r"blocks\.\d+\.attn\.(query|key|value)\.bias", key):
        return t.reshape(-1)                           # (H, Dh) -> (H·Dh,)
    if re.fullmatch(r"blocks\.\d+\.attn\.proj\.weight", key):
        return t.permute(2, 0, 1).flatten(1)           # (H, Dh, D) -> (D, H·Dh)
    if key.endswith(".weight") and t.ndim == 2:
        return t.T                                     # Dense (in, out) -> Linear (out, in)
    if key == "pos_embed" and t.ndim == 2:
        return t.unsqueeze(0)
    return t


FILTERS = {
    "timm": timm_filter_fn,
    "timm-naflex": naflex_filter_fn,
    "openai-clip": openai_clip_filter_fn,
    "open-clip-timm": open_clip_timm_filter_fn,
    "huggingface-clip": huggingface_clip_filter_fn,
    "dino": dino_filter_fn,
    "torchvision": torchvision_filter_fn,
    "huggingface": huggingface_filter_fn,
    "google-npz": google_filter_fn,
    "dinov3": meta_dinov3_filter_fn,
    "huggingface-dinov3": huggingface_dinov3_filter_fn,
    "huggingface-aimv2": huggingface_aimv2_filter_fn,
}


def detect_format(state_dict: dict) -> str:
    """Name of the checkpoint format from its keys: one of ``FILTERS``; ValueError if none fits."""
    keys = list(state_dict)
    if any(k.endswith("embeddings.patch_embeddings.projection.weight") for k in keys):
        return "huggingface"
    if "embeddings.patch_embeddings.weight" in state_dict and "embeddings.register_tokens" in state_dict:
        return "huggingface-dinov3"
    if any(re.fullmatch(r"(vision_model\.)?embeddings\.rms_norm\.weight", k) for k in keys):
        return "huggingface-aimv2"
    if any(re.fullmatch(r"(module\.)?(backbone\.)?(storage_tokens|rope_embed\.periods)", k) for k in keys):
        return "dinov3"
    if any(re.fullmatch(r"(module\.)?visual\.class_embedding", k) for k in keys):
        return "openai-clip"
    if any(re.match(r"(module\.)?visual\.trunk\.patch_embed\.", k) for k in keys):
        return "open-clip-timm"
    if any(re.fullmatch(r"(vision_model\.)?embeddings\.patch_embedding\.weight", k) for k in keys):
        return "huggingface-clip"
    if "conv_proj.weight" in state_dict and "encoder.pos_embedding" in state_dict:
        return "torchvision"
    if any(k.endswith("embedding/kernel") for k in keys):
        return "google-npz"
    plain = {re.sub(r"^(module\.)?(backbone\.)?", "", k) for k in keys}
    if "embeds.proj.weight" in plain:                                  # timm's NaFlexViT
        return "timm-naflex"
    if "patch_embed.proj.weight" in plain:
        dino_wrapped = any(re.match(r"^(module\.)?backbone\.", k) for k in keys)
        if dino_wrapped:
            return "dino"
        timm_only = "head.weight" in plain or "cls_token" not in plain or any(re.search(TIMM_FAMILY_KEYS, k)
                                                                               for k in plain)
        return "timm" if timm_only else "dino"
    shown = ", ".join(keys[:8]) + (f", … ({len(keys)} keys)" if len(keys) > 8 else "")
    raise ValueError(f"Unknown checkpoint format! Expected the keys of a torchvision, timm, DINO, Hugging Face or "
                     f"Google ViT (or of an OpenAI / open_clip CLIP), but got: {shown or 'no tensors at all'}.")


# Keys only timm's CLIP, SigLIP, EVA, BEiT, relative-position and parallel-block models have: such a checkpoint
# without a head is timm's, not DINO's (nor is one without a CLS token: every DINO has one, timm's SigLIP towers and
# mean-pooled ViTs have none).
TIMM_FAMILY_KEYS = (r"^(norm_pre\.|attn_pool\.|fc_norm\.|shared_rel_pos\.)"
                    r"|\.attn\.(q_bias|relative_position_bias_table|q_proj\.|rel_pos\.)"
                    r"|\.gamma_1$|\.mlp\.fc1_g\.|\.attns\.0\.")


def checkpoint_filter_fn(state_dict: dict, fmt: str | None = None) -> dict:
    """Any supported checkpoint's tensors -> our model's key names (format detected when not given)."""
    fmt = fmt or detect_format(state_dict)
    if fmt not in FILTERS:
        raise ValueError(f"Unknown format {fmt!r}! Expected one of {sorted(FILTERS)}.")
    return FILTERS[fmt](state_dict)


def unwrap_state_dict(obj: dict) -> dict:
    """The tensors of a checkpoint dict, looking inside the usual wrappers.

    DeiT saves {"model": …}, Lightning {"state_dict": …}, DINO {"teacher": …, "student": …} (the teacher is
    the one evaluated). Returns the first level whose values are tensors or arrays.
    """
    for key in ("model", "state_dict", "teacher", "model_ema", "module"):
        if isinstance(obj.get(key), dict):
            return unwrap_state_dict(obj[key])
    return {k: v for k, v in obj.items() if isinstance(v, (torch.Tensor, np.ndarray))}


def resample_pos_embed(pos_embed: torch.Tensor, num_prefix: int, new_grid: tuple[int, int],
                       old_grid: tuple[int, int] | None = None, antialias: bool = False) -> torch.Tensor:
    """(1, prefix + gh0·gw0, D) -> (1, prefix + gh·gw, D): patch part resized bicubically (with ``antialias``, as
    ``ViTConfig.pos_embed_antialias`` asks), prefix untouched.

    A checkpoint trained at another resolution (ViT-B/16 at 384: 24×24) loads into a model built for
    another grid this way; ``old_grid`` defaults to a square.
    """
    prefix, patches = pos_embed[:, :num_prefix], pos_embed[:, num_prefix:]
    n, D = patches.shape[1], patches.shape[2]
    if old_grid is None:
        side = math.isqrt(n)
        if side * side != n:
            raise ValueError(f"Cannot resample {n} position embeddings: not a square grid. Give the checkpoint's "
                             f"img_size so its grid is known.")
        old_grid = (side, side)
    if tuple(old_grid) == tuple(new_grid):
        return pos_embed
    patches = patches.reshape(1, old_grid[0], old_grid[1], D).permute(0, 3, 1, 2).float()  # (1, D, gh0, gw0)
    patches = F.interpolate(patches, size=tuple(new_grid), mode="bicubic", align_corners=False, antialias=antialias)
    patches = patches.permute(0, 2, 3, 1).reshape(1, new_grid[0] * new_grid[1], D)
    return torch.cat([prefix.float(), patches], dim=1).to(pos_embed.dtype)


def load_strict(model: torch.nn.Module, state_dict: dict, source: str = "checkpoint", assign: bool = False) -> None:
    """Copy ``state_dict`` into ``model``; ValueError listing missing, unexpected and mis-shaped keys if any.

    ``assign=True`` makes the checkpoint's tensors the parameters (for a model built on the meta device).
    """
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(expected))
    conflicts = [f"{k}: checkpoint {tuple(state_dict[k].shape)} vs model {tuple(expected[k].shape)}"
                 for k in expected if k in state_dict and tuple(state_dict[k].shape) != tuple(expected[k].shape)]
    if missing or unexpected or conflicts:
        parts = [f"{source} does not match the model ({describe(model.cfg)})!"]
        for title, items in (("missing keys", missing), ("unexpected keys", unexpected), ("shape conflicts", conflicts)):
            if items:
                shown = items[:20] + ([f"… and {len(items) - 20} more"] if len(items) > 20 else [])
                parts.append(f"  {title} ({len(items)}): " + "; ".join(shown))
        raise ValueError("\n".join(parts))
    model.load_state_dict(state_dict, strict=True, assign=assign)


def describe(cfg) -> str:
    """One line naming a config's shape, for messages (a config with its own ``describe``, a Swin's, says it)."""
    if hasattr(cfg, "describe"):
        return cfg.describe()
    return (f"patch {cfg.patch_size}, img {cfg.img_size[0]}×{cfg.img_size[1]}, D={cfg.embed_dim}, L={cfg.depth}, "
            f"H={cfg.num_heads}, MLP={cfg.mlp_dim}, classes={cfg.num_classes}")
