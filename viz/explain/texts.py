"""The Explain tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.explain": ("Explain", "解释"),
    "about.explain": (
        "Why this class? Class-specific maps: pick a method and a class (click one of the top-5, or search all "
        "classes). A contrast class shows why A rather than B (red: more for A, blue: more for B). Each method and "
        "its paper: [docs/explain.md](docs/explain.md).",
        "为什么是这个类别？类别相关的热力图：选择一种方法和一个类别（点击前 5 个类别之一，或在所有类别中搜索）。"
        "选择对比类别可以看“为什么是 A 而不是 B”（红色：更支持 A，蓝色：更支持 B）。每种方法及其论文见"
        "[docs/explain.md](docs/explain.md)。"),
    "control.method": ("Method", "方法"),
    "help.method": ("how the map is computed (each method's paper: the link above)",
                    "热力图的计算方法（每种方法的论文见上方链接）"),
    "method_title.gae": ("GAE: gradient × attention, over the layers", "GAE：梯度 × 注意力，逐层累积"),
    "method_title.attnlrp": ("AttnLRP: relevance through attention", "AttnLRP：穿过注意力传播的相关性"),
    "method_title.cp_lrp": ("CP-LRP: relevance, none through the softmax", "CP-LRP：不经过 softmax 的相关性"),
    "method_title.grad_rollout": ("Gradient-weighted rollout (vit-explain)", "梯度加权的注意力展开（vit-explain）"),
    "method_title.gradcam": ("Grad-CAM on the last layer's tokens", "最后一层词元上的 Grad-CAM"),
    "method_title.attention": ("Last layer's attention (the same for every class)", "最后一层的注意力（对所有类别都一样）"),
    "method_title.rollout": ("Attention rollout (the same for every class)", "注意力展开（对所有类别都一样）"),
    "method_title.random": ("Random map: the baseline to beat", "随机图：要胜过的基准"),
    "control.target": ("Class to explain", "要解释的类别"),
    "help.target": ("type to search all classes; clicking a class in the top-5 picks it too",
                    "输入文字搜索所有类别；点击前 5 个类别中的一个也可以选中它"),
    "control.contrast": ("Rather than (contrast)", "而不是（对比）"),
    "help.contrast": ("optional: show the map of the class minus this class's map",
                      "可选：显示该类别的热力图减去这个类别的热力图"),
    "choice.top1": ("(the top-1 class)", "（概率最高的类别）"),
    "choice.none": ("(none)", "（无）"),
    "picture.explanation": ("Explanation", "解释图"),
    "picture.methods_row": ("Every method for the same class", "同一类别的所有方法"),
    "explain.line": (
        "**{method}** for **{target}**: probability {probability:.1%}, score {score:.3f}; a {grid} map read from "
        "{readout}.",
        "**{method}** 解释 **{target}**：概率 {probability:.1%}，得分 {score:.3f}；{grid} 的热力图，读取自 {readout}。"),
    "explain.contrast": (" Contrast: minus **{other}**.", " 对比：减去 **{other}**。"),
    "control.texts": ("Texts (CLIP zero-shot)", "文本（CLIP 零样本）"),
    "help.texts": ("class names or prompts, one per line or separated by commas, e.g. a photo of a cat",
                   "类别名或提示语（用英文写），每行一个或用逗号分开"),
    "button.zero_shot": ("Score the texts", "计算文本的概率"),
    "label.zero_shot": ("Zero-shot probabilities", "零样本概率"),
    "control.explain_text": ("Explain this text instead of a class", "解释这段文本而不是类别"),
    "help.explain_text": ("a CLIP checkpoint's image–text score is the target", "目标是 CLIP 检查点的图文相似度得分"),
    "message.no_text_tower": ("This checkpoint has no text tower, so typed texts cannot be scored.",
                              "这个检查点没有文本塔，无法计算输入文本的概率。"),
}

PICTURES = {
    "colorbar.class_map": ("{method}: {target}\n× an even share (1 = 1/{patches} of the map's total)",
                           "{method}：{target}\n平均份额的倍数（1 = 全图总量的 1/{patches}）"),
    "colorbar.signed_map": ("{method}: {target}, red for, blue against\n× an even share (1 = 1/{patches} of Σ|R|)",
                            "{method}：{target}，红色支持，蓝色反对\n平均份额的倍数（1 = Σ|R| 的 1/{patches}）"),
    "colorbar.contrast_map": ("{method}: {target} − {other}\n× an even share of {target} (1 = 1/{patches})",
                              "{method}：{target} − {other}\n{target} 平均份额的倍数（1 = 1/{patches}）"),
    "list.separator": (", ", "、"),
    "caption.signed_methods": ("{methods}: red for the class, blue against, white 0", "{methods}：红色支持该类别，蓝色反对，白色为 0"),
}

register(PAGE, PICTURES)
