"""The command line of ``python -m viz``: its options, their checks, and the map options and model they give."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from vit.command import program

from .. import panels
from ..compare.animate import ANIMATED_MAPS, FRAME_MS
from ..explain import METHODS
from ..i18n import LANGUAGES
from ..maps.rollout import FUSIONS

PREPROCESS_CHOICES = ("own", "crop", "squash")  # vit.preprocess.CHOICES, without importing torch for --help

PANEL_HELP = """panels written per image (PNG):
  input              the cropped image the model saw
  rollout            attention rollout of the CLS token (Abnar & Zuidema 2020)
  attention          CLS attention of --layer / --head
  threshold          DINO mask: smallest patch set holding --share of the attention mass
  heads              CLS attention of every layer (rows) and head (columns)
  (models without a CLS token: the query is SigLIP's MAP probe, or the mean of the patches for mean-pooled
  models such as BEiT; result.json's "readout" and "captions" name it)
  query_row          where the --query patch attends (its attention row)
  query_column       who attends to the --query patch (its attention column)
  filters            Figure 7 left: top 28 principal components of the patch-embedding filters
  pos_similarity     Figure 7 centre: cosine similarity of the position embeddings (a rotary model without a
                     table: the similarity its rotation implies)
  mean_distance      Figure 7 right: mean attention distance of every head against depth
  token_norms        L2 norm of every patch token after each block, high-norm tokens outlined
  token_norm_curves  token norms against depth, flagged tokens in red

attention.npz holds: attention (L, H, T, T), rollout (gh, gw), num_prefix_tokens, grid (gh, gw),
patch_size, pos_similarity (N, N) on the checkpoint's native grid (rotary_kernel (N, N) instead for a rotary
model without a table), mean_distance (L, H) in pixels,
token_norms (L, T), probabilities (K,), cls_attention (the query's attention), query_row, query_column
(gh, gw), query_patch, high_norm_flags (L, gh, gw), probe_attention (H, T) for MAP models. Layers and heads
are 0-based; negative indices count from the end.

--animate adds animation.gif (one frame per layer; animation.mp4 too with --mp4). --compare B writes, instead
of the panels, compare.png and compare.json: models [A, B] with name, sha256 (first 8 hex digits) and top_k
(probability, probability_in_other, change_b_minus_a), alignment, attention, differences, files.

With --explain M1,M2,…: explain_<method>.png per method (the map for --target, default each image's
top-1 class) and explanations.png (all of them side by side), explain_<method> (gh, gw) in attention.npz,
and "explain": {"target": {"index", "name"}, "methods": […]} in result.json (with a CLIP checkpoint --target is a
text: "target": {"index" among --texts, "name", "text"}). With --contrast B also
contrast_<method>.png and contrast_<method>: the --target map minus B's, diverging colours centred on 0,
and "contrast": {"index", "name"}. Methods: """ + ", ".join(METHODS) + """.

With --inside lens,dla,heads (any of them; layers and heads counted from 0): inside_lens.png, inside_dla.png,
inside_heads.png (inside_patch.png with --patch-from), inside_lens_patches (L, gh, gw) class index,
inside_dla_heads (L, H) and inside_head_importance (L, H) in attention.npz, and in result.json "inside":
{"target": {"index", "name"}, "lens": [{"layer", "top5": [{"index", "name", "probability"}], "target_probability",
"target_rank"}], "dla": {"logit", "head_bias", "embedding", "attention_bias": [L], "heads": L x H, "mlp": [L]},
"heads": {"ablation", "delta_logit": L x H, "delta_logit_linear": L x H, "spearman"}, "ablated" (with --ablate):
{"heads", "top5", "delta_logit"}, "patched" (with --patch-from): {"from", "target", "heads": L x H, "residual":
L x T}}. embedding + sum(attention_bias) + sum(heads) + sum(mlp) + head_bias = logit. A folder run with --inside
heads adds "inside": {"head_importance": L x H, "lens_top1": L (labelled folders), ...} to statistics.json.

With --faithfulness also trust.png (every method's map with its AUCs, the curves, the correlations between
methods) and, in result.json's "explain": "faithfulness": {method: {"deletion_auc", "insertion_auc",
"deletion": [11], "insertion": [11]}} (target probability at fractions 0, 0.1, ..., 1 of the patches removed /
kept, most relevant first; --steps N values), "auc_error" {"deletion", "insertion", "abpc"}: each area's
|AUC(all points) - AUC(every other point)|, "perturbation" ("tokens", "mean_colour", "blur" or "road"), and per
method "gains" over the random map {"deletion_gain", "insertion_gain"}. Several --perturbation protocols add
"faithfulness_by_protocol" {protocol: {method: {...}}}, "fractions", "verdicts" {method: {"verdict": "faithful" |
"not_faithful" | "depends_on_protocol", "abpc_gain": {protocol: g}, "margin": {protocol: m}}} and
"protocol_agreement" {"protocols", "kendall_tau"}; "faithfulness" is then the first protocol's. --sanity adds "sanity": {method: [Spearman rho after 1, 2, ...,
L layers randomised from the top]} and "sanity_flagged": {method: true when rho stays >= 0.5 with all layers
randomised}. A folder run adds DIR/summary/faithfulness.json ({method: {"deletion_auc", "insertion_auc" (means
over images), their "_std", "deletion", "insertion" (mean curves), "images", "abpc", "ci95" {score: [low, high]}
(95 % bootstrap interval over images, 1,000 seeded resamples), "verdict" (over the folder), "by_protocol" with
several protocols}}) and faithfulness.md. --protocol chefer2021 adds DIR/summary/chefer2021.json and .md.

With --features: features_pca.png, features_similarity.png, features_pcs (gh, gw, 3: each patch's projection on
the first three principal components of this photo's patch features, unscaled) and features_similarity (gh, gw:
cosine similarity of the --query patch's features to every patch's) in attention.npz, and "features": {"layer",
"explained_variance_ratio": [3], "query": [row, col]} in result.json. A folder run adds
DIR/summary/features_pca_joint.png (one PCA fitted on all the photos' patches, the first photos coloured by it)
and features_pca_joint.npz (mean, components, explained_variance_ratio, images, pcs).

With --concepts SAE_DIR: concepts.png (the photo's 8 strongest latents of that SAE, each as a map over the photo
with its strongest patches of the training folder beside it), concepts (8, gh, gw) and concept_ids (8,) in
attention.npz, and "concepts": [{"latent", "mean", "max", "label"}] in result.json, strongest (mean over the
patches) first; see docs/concepts.md.

With several images (or --stats-only), DIR/summary/ holds statistics.json (images, mean_distance L x H,
entropy L x H, prefix_share L, high_norm_share L, top1/top5 for a folder labelled by sub-folder, with their
standard deviations over images), statistics.md, mean_distance.png, entropy.png, attention_shares.png and
mean_distance.npz. A folder whose images sit in sub-folders is labelled: each sub-folder names a class by
index (281), WordNet ID (n02123045) or class name (tabby).

Many processes: torchrun --nproc-per-node N -m viz FOLDER ... (each takes its share of the images; the
statistics equal one process's)."""



def head_arg(text: str) -> int | None:
    """--head: an integer, or "mean" for the mean of heads."""
    if text.lower() == "mean":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a head number or 'mean' but got {text!r}") from None


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1 but got {text}")
    return value


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0 but got {text}")
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 but got {text}")
    return value


def protocols_arg(text: str) -> list[str]:
    """--perturbation: comma-separated protocols or "all" (``viz.trust.protocols.protocol_list``)."""
    from ..trust.protocols import protocol_list

    try:
        return protocol_list(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def curve_points(text: str) -> int:
    """--steps: a whole number of at least 3 (every other point of the curve must still span 0 … 1)."""
    value = int(text)
    if value < 3:
        raise argparse.ArgumentTypeError(f"expected at least 3 points per curve but got {text}")
    return value


def text_list(text: str) -> list[str]:
    """--texts: comma-separated texts, each stripped; empty entries are an error."""
    texts = [t.strip() for t in text.split(",")]
    if not all(texts):
        raise argparse.ArgumentTypeError(f"expected comma-separated non-empty texts but got {text!r}")
    return texts


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=program("viz"),
                                description="Write every attention panel of a Vision Transformer as PNG, plus the "
                                            "numbers behind them (result.json, attention.npz).",
                                epilog=PANEL_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("images", nargs="+", metavar="IMAGE", help="image files, or folders of images (not recursive)")
    p.add_argument("--weights", default="default", metavar="PATH",
                   help="checkpoint: a file, a Hugging Face folder, a known name, a file in weights/ or a Hugging "
                        "Face Hub name such as facebook/dinov2-small (default: torchvision's ViT-B/16)")
    add_no_verify(p)
    p.add_argument("--preprocess", choices=PREPROCESS_CHOICES, default="own",
                   help="how a photo becomes the model's input: own (default: the checkpoint's source's own "
                        "preprocessing, e.g. timm's crop_pct or a Hugging Face processor's squash), crop (keep the "
                        "aspect ratio and cut out the centre) or squash (the whole photo stretched to the input); "
                        "result.json records it under \"preprocess\"")
    p.add_argument("--out", default="out", type=Path, metavar="DIR", help="output folder (default: out)")
    p.add_argument("--input-size", nargs=2, type=int, metavar=("H", "W"),
                   help="run the model at this input size instead of the checkpoint's (multiples of the patch "
                        "size; position embeddings are resampled, Figure 7 keeps the native grid)")
    p.add_argument("--frames", type=positive, metavar="N",
                   help="a video model: how many frames of each video it reads (default: its own count; a multiple "
                        "of its tubelets)")
    g = p.add_argument_group("CLIP zero-shot")
    g.add_argument("--texts", type=text_list, metavar="TEXTS",
                   help='comma-separated class names or prompts, e.g. "a photo of a cat,a photo of a dog": their '
                        "zero-shot probabilities softmax(logit_scale · cosine(image, text)) go into result.json "
                        "(checkpoints with a CLIP text tower: OpenAI, open_clip, Hugging Face CLIPModel)")
    g = p.add_argument_group("device, batches and data sets")
    g.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,mps}",
                   help="where the model runs: auto (default: CUDA when available, else the CPU), cpu, cuda, "
                        "cuda:N or mps")
    g.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="number format of the forward pass (default: float32); bfloat16/float16 run the matrix "
                        "products in 16 bits under autocast, for GPUs (slower than float32 on most CPUs)")
    g.add_argument("--batch-size", type=positive, default=1, metavar="N", help="images per forward pass (default: 1)")
    g.add_argument("--workers", type=non_negative, default=0, metavar="K",
                   help="processes decoding images (default: 0, in the main process)")
    g.add_argument("--stats-only", action="store_true",
                   help="write only DIR/summary/ (statistics over the images), no per-image files")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted run into the same --out, skipping the images it finished")
    g = p.add_argument_group("rollout")
    g.add_argument("--fusion", choices=FUSIONS, default=FUSIONS[0], help=f"head fusion (default: {FUSIONS[0]})")
    g.add_argument("--discard-ratio", type=float, default=0.0, metavar="R",
                   help="set the lowest fraction R (0 <= R < 1) of each fused matrix to 0, never entries in the "
                        "row or column of the read-out token (default: 0, as in the paper)")
    g.add_argument("--start-layer", type=int, default=0, metavar="L", help="first block of the product (default: 0)")
    g.add_argument("--mask-artifacts", action="store_true",
                   help="drop high-norm artifact tokens (see --norm-ratio) from every map of the CLS attention: "
                        "rollout, attention, threshold mask, heads and patch query")
    g = p.add_argument_group("attention, patch query and mask")
    g.add_argument("--layer", type=int, default=-1, help="block for the attention, query and mask panels (default: -1, the last)")
    g.add_argument("--head", type=head_arg, default=None, help="head number, or 'mean' (default: mean of heads)")
    g.add_argument("--query", nargs=2, type=int, metavar=("ROW", "COL"),
                   help="patch for the query panels (default: the centre of the grid)")
    g.add_argument("--query-rollout", action="store_true",
                   help="query panels from the rollout matrix (all blocks) instead of --layer")
    g.add_argument("--share", type=fraction, default=0.6,
                   help="threshold mask: share of the attention mass kept (default: 0.6, as in DINO)")
    g.add_argument("--mask-source", choices=("attention", "rollout"), default="attention",
                   help="threshold mask of the CLS attention of --layer or of the rollout (default: attention)")
    g = p.add_argument_group("token norms and attention distance")
    g.add_argument("--norm-ratio", type=float, default=3.0, metavar="Q",
                   help="flag a patch whose norm exceeds Q times its block's median patch norm (default: 3)")
    g.add_argument("--distance-renormalise", action="store_true",
                   help="mean attention distance over patch tokens only, rows renormalised (default: attention "
                        "to prefix tokens counts as distance 0, as in the common reproduction)")
    g = p.add_argument_group("rendering and files")
    g.add_argument("--cmap", default="inferno", help="matplotlib colormap for the maps (default: inferno)")
    g.add_argument("--alpha", type=fraction, default=0.6, help="opacity of the heat map over the photo (default: 0.6)")
    g.add_argument("--no-colorbar", action="store_true", help="overlays without a colour bar")
    g.add_argument("--scale", type=int, default=1, help="enlarge the overlays this many times (default: 1)")
    g.add_argument("--lang", choices=LANGUAGES, default="en",
                   help="language of the texts in the pictures: en or zh-CN (Simplified Chinese) (default: en)")
    g.add_argument("--top-k", type=int, default=5, help="classes listed in result.json (default: 5)")
    g.add_argument("--float16", action="store_true", help="store attention as float16 (half the file size)")
    g.add_argument("--compress", action="store_true", help="compress attention.npz (smaller, slower)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g = p.add_argument_group("dense features (DINOv2 / DINOv3)")
    g.add_argument("--features", action="store_true",
                   help="the patch features of --features-layer after the final LayerNorm: features_pca.png (the "
                        "first three principal components of this photo's patches as RGB), features_similarity.png "
                        "(cosine similarity of the --query patch, default the centre, to every patch); a folder adds "
                        "summary/features_pca_joint.png, one PCA fitted on every photo's patches")
    g.add_argument("--features-layer", type=int, metavar="L",
                   help="layer whose output is read for --features (0-based, -1 the last: default)")
    g = p.add_argument_group("concepts (sparse autoencoders)")
    g.add_argument("--concepts", type=Path, metavar="DIR",
                   help="an SAE folder (python -m viz.concepts train, sae-lens or ViT-Prisma): concepts.png (the 8 "
                        "strongest latents' maps, their top patches beside them), concepts and concept_ids in "
                        "attention.npz, \"concepts\" in result.json")
    g = p.add_argument_group("class-specific explanations")
    g.add_argument("--explain", metavar="METHODS",
                   help=f"comma-separated explanation methods, from: {', '.join(METHODS)}")
    g.add_argument("--target", metavar="NAME_OR_INDEX",
                   help="class to explain (and to look inside for, with --inside), by name ('tabby') or index (default: "
                        "each image's top-1 class); with a CLIP checkpoint a text, e.g. 'a photo of a cat' (default: the "
                        "best of --texts)")
    g.add_argument("--contrast", metavar="NAME_OR_INDEX",
                   help="also 'why --target rather than this class' (or text): the --target map minus this one's map; "
                        "with --inside every logit is --target's minus this one's")
    g = p.add_argument_group("inside the model (layers and heads counted from 0)")
    g.add_argument("--inside", metavar="VIEWS",
                   help="comma-separated views, from: lens (the logit lens: the readout after each layer, and each "
                        "patch's own top-1 class), dla (direct logit attribution: the --target logit split over the "
                        "embedding, every head and every MLP), heads (head importance: the logit's change when each "
                        "head alone is ablated, exact and by attribution patching)")
    g.add_argument("--ablate", metavar="L.H,…",
                   help="heads ablated together, e.g. 11.0,11.2: the new top-5 and the --target logit's change "
                        "(result.json's inside.ablated)")
    g.add_argument("--patch-from", type=Path, metavar="IMAGE2",
                   help="a second photo: the share of the logit difference each head (exact) and each stream position "
                        "(estimate) moves when taken from it, for --target or else its own top-1 class "
                        "(inside_patch.png)")
    g.add_argument("--reference", type=Path, metavar="FOLDER",
                   help="ablate heads to their mean output over this folder's images (per token position) instead "
                        "of zero, for --ablate and --inside heads")
    g = p.add_argument_group("can this map be trusted? (with --explain)")
    g.add_argument("--faithfulness", action="store_true",
                   help="deletion and insertion curves of every --explain map (patches dropped from the token "
                        "sequence, most relevant first, 11 fractions) and their AUCs, in result.json's "
                        "explain.faithfulness; for a folder, their mean in DIR/summary/faithfulness.json and .md")
    g.add_argument("--sanity", action="store_true",
                   help="model-randomisation sanity check: Spearman correlation of every --explain map with its map "
                        "after 1 … L layers re-initialised from the top, in result.json's explain.sanity")
    g.add_argument("--perturbation", type=protocols_arg, default=["tokens"], metavar="P1,P2,...|all",
                   help="how --faithfulness removes a patch: tokens (dropped from the sequence; default), or in pixel "
                        "space mean_colour (the photo's mean colour), blur (the blurred photo), road (imputed from the "
                        "neighbouring pixels, ROAD); several, comma-separated, or all: each method then gets a verdict "
                        "that holds under every protocol (faithful / not_faithful / depends_on_protocol) and the "
                        "protocols' agreement on the ranking (Kendall tau)")
    g.add_argument("--steps", type=curve_points, default=11, metavar="N",
                   help="points per curve: fractions 0, 1/(N-1), ..., 1 of the patches removed / kept (default: 11); "
                        "every AUC comes with its error |AUC(all points) - AUC(every other point)|")
    g.add_argument("--protocol", choices=("chefer2021",),
                   help="chefer2021: over a labelled folder, Chefer et al. 2021's positive and negative perturbation "
                        "test (top-1 accuracy against the fraction of pixels removed, 0 to 90 %%; AUC = "
                        "np.trapz(acc, x) * 100) of every --explain map, for each image's predicted class, or its "
                        "own label with --target label; DIR/summary/chefer2021.json and .md")
    g = p.add_argument_group("compare and animate")
    g.add_argument("--compare", metavar="B",
                   help="compare the --weights model (A) with this checkpoint (B) on each image: writes compare.png "
                        "and compare.json (names, sha256 prefixes, top-k with the change, differences of the rollout, "
                        "of the --layer/--head CLS attention and of the mean attention distance) instead of the panels")
    g.add_argument("--animate", action="store_true",
                   help="also write animation.gif: one frame per block, the block written on each (with --compare: "
                        "animation.gif of A and animation_b.gif of B)")
    g.add_argument("--animate-map", choices=ANIMATED_MAPS, default="attention",
                   help="what the animation shows: the CLS attention of each block (--head or the mean of heads), or "
                        "the rollout up to each block (--fusion, --discard-ratio, --mask-artifacts) (default: attention)")
    g.add_argument("--frame-ms", type=int, default=FRAME_MS, help=f"animation: milliseconds per frame (default: "
                                                                 f"{FRAME_MS})")
    g.add_argument("--mp4", action="store_true",
                   help="animation: also write animation.mp4 (needs the optional packages imageio and imageio-ffmpeg)")
    return p



def options_from(args: argparse.Namespace) -> panels.MapOptions:
    return panels.MapOptions(layer=args.layer, head=args.head, fusion=args.fusion, discard_ratio=args.discard_ratio,
                             start_layer=args.start_layer, mask_artifacts=args.mask_artifacts,
                             norm_ratio=args.norm_ratio, query=tuple(args.query) if args.query else None,
                             query_rollout=args.query_rollout, share=args.share, mask_source=args.mask_source,
                             distance_renormalise=args.distance_renormalise, cmap=args.cmap, alpha=args.alpha,
                             colorbar=not args.no_colorbar, scale=args.scale, lang=args.lang)



def add_no_verify(p: argparse.ArgumentParser) -> None:
    """``--no-verify``, for every command that opens ``--weights`` with ``load_model``."""
    p.add_argument("--no-verify", action="store_true",
                   help="open the weights without checking them against their own library's model of the same file "
                        "(timm, transformers, open_clip, torchvision): the first line and result.json's \"verified\" "
                        "then say unverified (default: checked; a difference beyond float32 tolerance is refused)")


def load_model(args: argparse.Namespace):
    """``vit.load(--weights)`` with ``--preprocess``, set up to run at ``--input-size`` if given; ValueError says
    what is wrong. Whether it was checked against its library, and what the loader assumed, are printed first
    (``print_verification``, ``print_assumptions``)."""
    import vit

    try:
        loaded = vit.load(args.weights, verify=not args.no_verify)
    except (ValueError, FileNotFoundError) as error:
        raise ValueError(f"cannot load the weights: {error}") from None
    print_verification(loaded, args.weights)
    print_assumptions(loaded, args.weights)
    if args.input_size:
        P = loaded.model.cfg.patch_size
        H, W = args.input_size
        if H % P or W % P or H < P or W < P:
            raise ValueError(f"--input-size {H} {W} must be positive multiples of the patch size {P}.")
        # the checkpoint's own preprocessing at the new size (its crop ratio kept), then the --preprocess choice
        loaded = dataclasses.replace(loaded, own_preprocess=loaded.own_preprocess.at_size((H, W)))
    return loaded.with_preprocess(getattr(args, "preprocess", "own"))


def print_verification(loaded, source: str, stream=None) -> None:
    """One line on stderr, the first the command prints: the load checked against its own library
    (``vit.LoadedModel.verified``): "checked against timm 1.0.31: Δ 3e-07", "unverified" or "not verified (…)"."""
    print(f"{source}: {loaded.verified}", file=stream or sys.stderr)


def print_assumptions(loaded, source: str, stream=None) -> None:
    """One "assumed:" line per fact the loader assumed rather than read (``vit.LoadedModel.assumptions``), on stderr:
    they change what the maps mean, so they are printed even with --quiet."""
    for sentence in loaded.assumptions:
        print(f"assumed ({source}): {sentence}", file=stream or sys.stderr)
