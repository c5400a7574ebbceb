"""The Patch query tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.query": ("Patch query", "图块查询"),
    "about.query": (
        "Click a patch of the photo: where it attends (its attention row) and which patches attend to it (its "
        "column), in the layer and head picked in the Attention tab.",
        "点击照片上的一个图块：看它关注哪里（注意力矩阵的行）和哪些图块关注它（列），层和头在“注意力”页选择。"),
    "control.rolled": ("Through all layers (rollout) instead of one layer", "贯穿所有层（注意力展开），而不是单独一层"),
    "help.rolled": (
        "show the patch's row and column of the rollout matrix instead of one layer's attention",
        "显示注意力展开矩阵中该图块的行和列，而不是某一层的注意力"),
    "picture.query_photo": ("Click a patch", "点击一个图块"),
    "picture.query_out": ("Where this patch attends", "这个图块关注哪里"),
    "picture.query_in": ("Which patches attend to it", "哪些图块关注它"),
    "note.query_masked": (
        "Patch ({row}, {col}) is a high-norm artifact token and is masked out: untick the mask to query it.",
        "图块 ({row}, {col}) 是高范数伪影词元，已被屏蔽：取消屏蔽后才能查询它。"),
    "note.query_token": ("Patch ({row}, {col}) lies in token ({token_row}, {token_col}) of stage {stage}'s {grid} "
                         "grid: its row and its column in this layer, the layer's windows outlined.",
                         "图块 ({row}, {col}) 位于第 {stage} 阶段 {grid} 网格的词元 ({token_row}, {token_col})："
                         "它在这一层的行与列，白线框出该层的窗口。"),
}

PICTURES = {
    "name.rollout": ("rollout", "注意力展开"),
    "colorbar.attends_to": ("attends to, {where}", "它关注哪里，{where}"),
    "colorbar.attended_by": ("attended by, {where}", "谁关注它，{where}"),
}

register(PAGE, PICTURES)
