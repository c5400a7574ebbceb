"""The Rollout tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    # --- tabs -----------------------------------------------------------------------------------------------
    "tab.rollout": ("Rollout", "注意力展开"),
    # --- tab descriptions -----------------------------------------------------------------------------------
    "about.rollout": (
        "Attention rollout (Abnar & Zuidema 2020) follows the CLS token's attention through every layer, with "
        "the residual connection mixed in: which patches flowed into the CLS token that classified the photo.\n\n"
        "**Rollout is the same for every class**: it shows where the model looked, not why it chose a class. For "
        "that, open **Explain**. A model without a CLS token (an average-pooled ViT, SigLIP's probe, a Swin) is read "
        "through what it pools instead: the note under the map says which.",
        "注意力展开（Abnar & Zuidema 2020）沿着每一层追踪 CLS 词元的注意力，并计入残差连接：显示哪些图块流入了给照片分类的 CLS 词元。"
        "\n\n**注意力展开对所有类别都一样**：它显示模型看了哪里，而不是它为什么选了某个类别。想看原因，请打开“**解释**”页。没有 CLS 词元的模型（平均池化的 ViT、SigLIP 的探针、Swin）改为读取它池化的内容：图下的说明会写明是哪一种。"),
    # --- controls: labels and help ----------------------------------------------------------------------------
    "control.fusion": ("Head fusion", "多头融合方式"),
    "help.fusion": (
        "how each layer's heads are combined into one matrix before rollout: their mean, maximum or minimum",
        "做注意力展开之前，每一层的多个头如何合成一个矩阵：取平均、最大值或最小值"),
    "control.discard": ("Discard ratio", "丢弃比例"),
    "help.discard": (
        "lowest share of each layer's attention set to 0 before rollout; higher values keep only the strongest "
        "paths",
        "注意力展开前把每层注意力中最小的这一部分设为 0；数值越大，只保留越强的路径"),
    "control.start_layer": ("Start layer", "起始层"),
    "help.start_layer": (
        "the first layer of the rollout; the layers before it are left out",
        "注意力展开从这一层开始，之前的层不计入"),
    # --- pictures on the page -----------------------------------------------------------------------------
    "picture.rollout": ("Attention rollout", "注意力展开"),
    "note.rollout_through": ("This model's rollout runs through every layer's windows and every merge between its "
                             "stages, and is read by the {query} (docs/swin.md): the discard ratio acts on layers of "
                             "global attention only, and artifact masking needs one sequence of tokens.",
                             "这个模型的注意力展开穿过每一层的窗口和阶段之间的每一次合并，由{query}读出（见 docs/swin.md）："
                             "丢弃比例只作用于全局注意力的层，伪影遮蔽需要贯穿各层的同一个词元序列。"),
}

PICTURES: dict[str, tuple[str, str]] = {}

register(PAGE, PICTURES)
