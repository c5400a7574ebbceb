"""The Features tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    # --- the Features tab (vit_explorer.tabs.features; the pictures by viz.features.view) -----------------------
    "tab.features": ("Features", "特征"),
    "about.features": (
        "Not only where the model attends, but what it has made of each patch: the patch tokens of one layer after "
        "the final LayerNorm (DINOv2's x_norm_patchtokens for the last layer). The first three principal components "
        "of this photo's patch features are shown as red, green and blue: patches with alike features get alike "
        "colours. Click a patch to see how alike every patch's features are to its own (cosine similarity), and add "
        "a second photo to find the same part there. What the colours and maps show, and what they do not, is in "
        "docs/maps.md.",
        "不只看模型关注哪里，也看它把每个图块变成了什么：某一层经过最后的 LayerNorm 之后的图块词元（最后一层即 DINOv2 的 "
        "x_norm_patchtokens）。这张照片图块特征的前三个主成分分别显示为红、绿、蓝：特征相近的图块颜色相近。点击一个图块，"
        "看每个图块的特征与它有多相近（余弦相似度）；再加一张照片，在那张照片中找同一个部位。这些颜色和图能说明什么、"
        "不能说明什么，见 docs/maps.md。"),
    "control.features_layer": ("Layer of the features", "特征所在的层"),
    "help.features_layer": ("whose output is read, after the final LayerNorm (the last: what DINO's users read)",
                            "读取哪一层的输出，经过最后的 LayerNorm（最后一层：DINO 的用户读的那一层）"),
    "control.features_foreground": ("Foreground only (DINOv2)", "只看前景（DINOv2）"),
    "help.features_foreground": (
        "the first component thresholded, the side holding less of the photo's border kept, the PCA fitted again on "
        "it; the background black",
        "对第一主成分取阈值，保留较少接触照片边缘的一侧，只在这一侧重新做主成分分析；背景为黑色"),
    "picture.features_pca": ("Principal components of the patch features as RGB", "图块特征的主成分（显示为红绿蓝三色）"),
    "picture.features_photo": ("Click a patch", "点击一个图块"),
    "picture.features_similarity": ("How alike every patch is to it", "每个图块与它有多相近"),
    "label.features_other": ("Second photo: where is the same part?", "第二张照片：同一部位在哪里？"),
    "picture.features_match": ("The clicked patch's matches on the second photo", "所点图块在第二张照片上的匹配"),
    "note.features_match": ("Best match: patch ({row}, {col}), cosine similarity {value:.2f} (framed in cyan).",
                            "最佳匹配：图块 ({row}, {col})，余弦相似度 {value:.2f}（青色方框）。"),
    "note.features_other_first": ("Add a second photo to match the clicked patch on it.",
                                  "添加第二张照片，在其上匹配所点的图块。"),
    "one_sequence.features": ("This model's tokens change grid and width at every stage, so the dense features of one "
                          "layer on the photo's patch grid (this tab) are not defined for it.",
                          "这个模型的词元在每个阶段都改变网格和宽度，所以本页在图块网格上的单层稠密特征对它没有定义。"),
}

PICTURES = {
    "caption.features_pca": ("PCA of the patch features after layer {layer}: components 1-3 as red, green, blue "
                             "(variance {shares})",
                             "第 {layer} 层之后图块特征的主成分分析：第 1-3 主成分分别为红、绿、蓝（方差占比 {shares}）"),
    "caption.features_pca_foreground": ("PCA of the foreground's patch features after layer {layer} (background "
                                        "black; variance {shares})",
                                        "第 {layer} 层之后前景图块特征的主成分分析（背景为黑；方差占比 {shares}）"),
    "caption.features_pca_empty": ("Layer {layer}: the first component leaves too few foreground patches to colour",
                                   "第 {layer} 层：第一主成分留下的前景图块太少，无法着色"),
    "caption.features_joint": ("One PCA of the patch features after layer {layer} over {images} photos "
                               "(variance {shares}): the same colour, alike features in every photo",
                               "{images} 张照片共用一个第 {layer} 层图块特征的主成分分析（方差占比 {shares}）："
                               "各照片中颜色相同即特征相近"),
    "colorbar.similarity_other": ("cosine to the 1st photo's patch ({row}, {col}), layer {layer}",
                                  "与第一张照片图块 ({row}, {col}) 的余弦相似度，第 {layer} 层"),
}

register(PAGE, PICTURES)
