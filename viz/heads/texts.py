"""The All heads tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.heads": ("All heads", "所有头"),
    "about.heads": (
        "The CLS attention of every layer and head, as thumbnails over the photo (the longer of layers and heads runs "
        "across; on a phone, a few layers to a row). Each layer has its own colour scale, its brightest value written "
        "under its number, so that the early, almost uniform layers show their structure too. Click a thumbnail to "
        "select that layer and head. A model without a CLS token shows what it pools instead (a Swin: one grid per "
        "stage, on one scale per stage); the note under the grid says which.",
        "每一层、每个头的 CLS 注意力，以缩略图叠在照片上（层和头中数量较多的一个横向排列；手机上每行只放几层）。每一层各用自己的色标，"
        "最亮的值写在层号下方，这样前面几乎均匀的层也能看出结构。点击缩略图即可选中对应的层和头。没有 CLS 词元的模型改为显示它池化的内容（Swin：每个阶段一张网格，每个阶段一个色标）；网格下的说明会写明是哪一种。"),
    "picture.heads": ("Layers × heads", "层 × 头"),
    "help.heads_info": ("Click a thumbnail: its layer, head, mean attention distance and entropy appear here, and "
                        "the Attention tab shows it.",
                        "点击一个缩略图：这里显示它的层、头、平均注意力距离和熵，“注意力”页也会显示它。"),
    "note.heads_scale": (
        "One colour scale for every thumbnail, in multiples of uniform attention (1 = 1/{tokens}).",
        "所有缩略图共用一个色标，单位是均匀注意力的倍数（1 = 1/{tokens}）。"),
    "note.heads_layer_scale": (
        "Each layer on its own colour scale, from 0 to its brightest thumbnail, whose value in multiples of uniform "
        "attention (1 = 1/{tokens}) is written under the layer's number: early layers attend almost uniformly and "
        "late ones tens of times more sharply. Tick “One colour scale for all layers” to compare layers colour for "
        "colour.",
        "每一层使用自己的色标，从 0 到该层最亮的缩略图；这个最大值（单位：均匀注意力的倍数，1 = 1/{tokens}）写在层号下方："
        "浅层的注意力几乎是均匀的，深层则集中数十倍。勾选“所有层共用一个色标”即可按颜色直接比较各层。"),
    "note.head_info": (
        "layer {layer}, head {head}: mean attention distance {distance:.0f} pixels, entropy {entropy:.2f} bits "
        "({share:.0%} of the maximum {maximum:.2f})",
        "第 {layer} 层，头 {head}：平均注意力距离 {distance:.0f} 像素，熵 {entropy:.2f} 比特"
        "（最大值 {maximum:.2f} 的 {share:.0%}）"),
    "note.heads_stages": ("One grid per stage, each on the stage's own grid of tokens.",
                          "每个阶段一张网格，各自画在该阶段的词元网格上。"),
}

PICTURES = {
    "name.stage_grid": ("stage {stage}: {grid} tokens", "第 {stage} 阶段：{grid} 个词元"),
    # --- colour bars ---------------------------------------------------------------------------------------
    "colorbar.uniform": ("× uniform attention (1 = 1/{tokens})", "均匀注意力的倍数（1 = 1/{tokens}）"),
    "colorbar.layer_share": ("share of the layer's maximum\n(its × uniform under the layer's number)",
                             "占该层最大值的比例\n（该层最大值见层号下方，单位：均匀注意力的倍数）"),
}

register(PAGE, PICTURES)
