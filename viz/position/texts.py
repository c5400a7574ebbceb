"""The Position embeddings tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.position": ("Position embeddings", "位置嵌入"),
    "about.position": (
        "Cosine similarity of each patch's learnt position embedding with all others (ViT paper, Figure 7 "
        "centre): nearby patches, rows and columns are alike.",
        "每个图块学到的位置嵌入与其他所有图块的余弦相似度（ViT 论文图 7 中）：相邻的图块、同一行和同一列的图块彼此相似。"),
    "picture.position": ("Position embedding similarity", "位置嵌入相似度"),
}

PICTURES = {
    "title.rotary_kernel": (
        "No position table: this model rotates queries and keys by position (RoPE).\n"
        "Shown: the similarity its rotation implies (mean cos of the angle differences)",
        "没有位置表：这个模型按位置旋转查询和键（RoPE）。\n图中是旋转本身带来的位置相似度（角度差余弦的平均）"),
}

register(PAGE, PICTURES)
