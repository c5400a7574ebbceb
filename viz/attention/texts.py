"""The Attention tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.attention": ("Attention", "注意力"),
    "about.attention": (
        "Where the CLS token attends in one layer: one head, or the mean of the heads.",
        "CLS 词元在某一层里关注哪里：一个头，或各头的平均。"),
    "control.head": ("Head", "头"),
    "help.head": ("which attention head of the layer; untick Mean of heads to use it",
                  "该层的哪一个注意力头；取消“各头平均”后才生效"),
    "control.mean_heads": ("Mean of heads", "各头平均"),
    "note.head_rests": ("The Head slider rests while “Mean of heads” is ticked: untick it to pick one head.",
                        "勾选“各头平均”时，“头”滑块不可用：取消勾选即可选择单个头。"),
    "help.mean_heads": ("show the mean of all heads of the layer instead of one head",
                        "显示该层所有头的平均，而不是单个头"),
    "control.dino_mask": ("Outline the patches holding 60% of the attention (DINO)",
                          "框出占 60% 注意力的图块（DINO）"),
    "help.dino_mask": (
        "DINO's threshold mask: the fewest patches whose attention adds up to 60% of the map",
        "DINO 的阈值掩码：注意力加起来达到 60% 所需的最少图块"),
    "picture.attention": ("Attention of one layer and head", "某一层、某个头的注意力"),
}

PICTURES: dict[str, tuple[str, str]] = {}

register(PAGE, PICTURES)
