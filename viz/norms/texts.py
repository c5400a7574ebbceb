"""The Token norms tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.norms": ("Token norms", "词元范数"),
    "about.norms": (
        "The length of every token after each layer. A few background patches grow very long and soak up "
        "attention (Darcet et al. 2023); they are outlined in cyan.",
        "每一层之后每个词元的长度。少数背景图块会变得很长并吸走注意力（Darcet 等 2023）；它们用青色框出。"),
    "picture.norms": ("Patch token norms per layer", "每层图块词元的范数"),
    "picture.norm_curves": ("Token norms by depth", "词元范数随深度的变化"),
}

PICTURES = {
    "name.norm": ("norm", "范数"),
    "colorbar.norm_share": ("each layer from its smallest norm (0) to its largest\nunflagged one (1; under its number)",
                            "每层从最小范数（0）到未标记的最大范数\n（1；数值见层号下方）"),
}

register(PAGE, PICTURES)
