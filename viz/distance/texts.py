"""The Attention distance tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.distance": ("Attention distance", "注意力距离"),
    "about.distance": (
        "Mean distance in pixels over which each head attends, by depth (Figure 7 right): early layers mix local "
        "and global heads, late layers attend globally.",
        "每个头关注的平均距离（像素），按深度排列（图 7 右）：浅层既有局部的头也有全局的头，深层都关注全局。"),
    "picture.distance": ("Mean attention distance", "平均注意力距离"),
}

PICTURES: dict[str, tuple[str, str]] = {}

register(PAGE, PICTURES)
