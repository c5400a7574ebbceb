"""The Trust tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.trust": ("Trust", "可信度"),
    "about.trust": (
        "Can these maps be trusted? For the class picked in the Explain tab (or the top-1), every method's map is put "
        "to the test on this photo. **Deletion**: the patches the map calls most relevant are removed first and the "
        "class probability should fall fast (lower area is better). **Insertion**: only those patches are kept first "
        "and the probability should rise fast (higher is better). A map is **faithful** when it beats the random "
        "map by more than the curves' own error (Petsiuk et al. 2018; Chefer et al. 2021). How a patch is removed "
        "matters: dropped from the tokens, painted in the mean colour, blurred, or filled from its neighbours (ROAD, "
        "Rong et al. 2022), and a map can pass one way and fail another. The **sanity check** re-initialises the "
        "layers from the top and asks whether the map changes (Adebayo et al. 2018): a map that stays the same does "
        "not explain the model, however plausible it looks.",
        "这些图可信吗？对“解释”页选中的类别（或第 1 名），在这张照片上逐一检验每种方法的图。**删除**：先移除图认为最相关的图块，"
        "类别概率应当很快下降（面积越小越好）。**插入**：先只保留这些图块，概率应当很快上升（越大越好）。一张图比随机图好、"
        "且超出曲线本身的误差，才算**可信**（Petsiuk 等 2018；Chefer 等 2021）。图块怎样移除很重要：从词元序列中移除、"
        "涂成平均颜色、模糊，或由相邻像素插补（ROAD，Rong 等 2022）；同一张图可能在一种方式下通过、在另一种方式下失败。"
        "**健全性检验**从顶层起重新初始化各层，看图是否随之改变（Adebayo 等 2018）：不随模型改变的图并没有解释模型，"
        "不管它看起来多合理。"),
    "control.trust_depth": ("How thorough", "检验程度"),
    "choice.trust_fast": ("Fast: one way of removing patches (dropped from the tokens)",
                          "快速：一种移除图块的方式（从词元序列中移除）"),
    "choice.trust_thorough": ("Thorough: all 4 ways (tokens, mean colour, blur, ROAD)",
                              "全面：全部 4 种方式（词元、平均色、模糊、ROAD）"),
    "help.trust_depth": ("a map can look faithful under one way of removing patches and not under another: thorough "
                         "runs all four and calls a map faithful only where they agree",
                         "同一张图可能在一种移除方式下显得可信、在另一种下不可信：全面检验运行全部四种方式，只有都一致时才判为可信"),
    "control.trust_sanity": ("Also the sanity check", "同时做健全性检验"),
    "help.trust_sanity": ("re-initialise the layers from the top, one more at a time (L more passes per method "
                          "family), and compare each map with the trained model's",
                          "从顶层起逐层重新初始化（每类方法多 L 次计算），并与训练后模型的图比较"),
    "button.trust": ("Check every map", "检验所有图"),
    "picture.trust": ("Every method: maps sorted by faithfulness, curves, agreement, sanity",
                      "所有方法：按可信度排序的图、曲线、一致性、健全性"),
    "label.trust_aucs": ("Deletion and insertion AUCs under each way of removing patches",
                         "每种移除方式下的删除与插入 AUC"),
    "trust.cost": ("**Cost** on this model: fast about {fast} forward passes; thorough about {thorough}, {road} of "
                   "them on ROAD images (each also solves a sparse system for its removed pixels). Results already "
                   "checked are reused.",
                   "**开销**（此模型）：快速约 {fast} 次前向计算；全面约 {thorough} 次，其中 {road} 次用于 ROAD 图像"
                   "（每张还要为移除的像素解一个稀疏线性方程组）。已经检验过的结果会直接复用。"),
    "trust.head.fast": ("**{target}** (probability {probability:.2f}) · **fast**: one protocol, patches dropped from "
                        "the tokens · {points} points per curve · sorted by insertion − deletion",
                        "**{target}**（概率 {probability:.2f}）· **快速**：单一协议，图块从词元序列中移除 · "
                        "每条曲线 {points} 个点 · 按 插入 − 删除 排序"),
    "trust.head.one": ("**{target}** (probability {probability:.2f}) · {n} way of removing patches ({protocols}) · "
                       "{points} points per curve · sorted by insertion − deletion",
                       "**{target}**（概率 {probability:.2f}）· {n} 种移除图块的方式（{protocols}）· 每条曲线 {points} 个点 · "
                       "按 插入 − 删除 排序"),
    "trust.head.thorough": ("**{target}** (probability {probability:.2f}) · **thorough**: all {n} ways of removing "
                            "patches ({protocols}) · {points} points per curve",
                            "**{target}**（概率 {probability:.2f}）· **全面**：全部 {n} 种移除图块的方式"
                            "（{protocols}）· 每条曲线 {points} 个点"),
    "trust.took": (" · took {seconds} s", " · 用时 {seconds} 秒"),
    "trust.took_under": (" · took under 1 s", " · 用时不到 1 秒"),
    "trust.comma": (", ", "、"),
    "trust.bullet": ("**{method}**: {verdict}", "**{method}**：{verdict}"),
    "trust.table.method": ("method", "方法"),
    "trust.table.verdict": ("verdict on this photo", "在这张照片上的结论"),
    "trust.table.deletion": ("deletion AUC ↓", "删除 AUC ↓"),
    "trust.table.insertion": ("insertion AUC ↑", "插入 AUC ↑"),
    "trust.table.gain": ("gain over random ↑", "相对随机的增益 ↑"),
    "trust.table.sanity": ("ρ, all layers randomised", "全部层随机化后的 ρ"),
    "trust.table.abpc": ("insertion − deletion ↑", "插入 − 删除 ↑"),
    "trust.verdict.faithful.one": ("✓ faithful (one protocol)", "✓ 可信（单一协议）"),
    "trust.verdict.not_faithful.one": ("✗ worse than random (one protocol)", "✗ 不如随机（单一协议）"),
    "trust.verdict.inside.one": ("≈ cannot be told from random (one protocol)", "≈ 与随机无法区分（单一协议）"),
    "trust.verdict.faithful.all": ("✓ faithful on this photo under all {n} ways of removing patches",
                                   "✓ 在这张照片上可信：{n} 种移除图块的方式下都成立"),
    "trust.verdict.not_faithful.all": ("✗ not faithful: worse than random under all {n} ways of removing patches",
                                       "✗ 不可信：{n} 种移除图块的方式下都不如随机"),
    "trust.verdict.depends_on_protocol.all": ("? depends on how patches are removed ({marks}): see the table",
                                              "? 取决于图块如何移除（{marks}）：见下表"),
    "trust.verdict.inside.all": ("≈ cannot be told from random under any of the {n} ways of removing patches",
                                 "≈ {n} 种移除图块的方式下都与随机无法区分"),
    "trust.verdict.baseline": ("the baseline", "基准"),
    "trust.protocol.tokens": ("tokens", "词元"),
    "trust.protocol.mean_colour": ("mean colour", "平均色"),
    "trust.protocol.blur": ("blur", "模糊"),
    "trust.protocol.road": ("ROAD", "ROAD 插补"),
    "trust.legend.errors": (
        "± after an AUC: its sampling error, how far it moves between the curve's {points} points and every other "
        "one. **Gain over random**: the method's insertion − deletion minus the random map's; it counts only beyond "
        "its ± (both maps' errors added, at least 0.01).",
        "AUC 后的 ±：它的采样误差，即用曲线的 {points} 个点与只用隔一个点时的差。**相对随机的增益**：该方法的 插入 − 删除 "
        "减去随机图的；只有超出其 ±（两张图的误差之和，至少 0.01）才算数。"),
    "trust.legend.fast": (
        "A verdict under one protocol can change under another way of removing patches: **Thorough** runs all {n} "
        "and calls a map faithful only where they all agree.",
        "单一协议下的结论在另一种移除图块的方式下可能改变：**全面**检验运行全部 {n} 种，只有都一致时才判为可信。"),
    "trust.legend.gains": (
        "**Gain over random** under each way (the method's insertion − deletion minus the random map's, ± the margin "
        "it must exceed): ✓ beyond the margin, ✗ worse than random by more than it, ≈ within it.",
        "每种方式下**相对随机的增益**（该方法的 插入 − 删除 减去随机图的，± 为必须超出的余量）：✓ 超出余量，"
        "✗ 比随机差且超出余量，≈ 在余量之内。"),
    "trust.agreement": (
        "**Do the {n} ways rank the methods alike?** Kendall τ between their rankings (1: the same order, 0: "
        "unrelated, −1: reversed): {pairs} · mean {mean}.",
        "**这 {n} 种方式对方法的排序一致吗？** 各排序之间的肯德尔 τ（1：顺序相同，0：无关，−1：完全相反）：{pairs} · "
        "平均 {mean}。"),
    "trust.progress": ("checking the maps", "正在检验各图"),
    "message.trust_failed": ("Could not check the maps: {error}", "无法检验这些图：{error}"),
    "trust.pixels_only": ("On this model, fast paints the removed patches in the photo's mean colour and thorough adds blur and "
                   "ROAD: its windows tile the whole grid, so patches are never dropped from the tokens.",
                   "对这个模型，快速检验把移除的图层涂成照片的平均颜色，全面检验再加上模糊和 ROAD：它的窗口铺满整个网格，"
                   "所以图层从不从词元序列中移除。"),
}

PICTURES = {
    "trust.variant.tokens": ("patches dropped from the tokens", "图块从词元序列中移除"),
    "trust.variant.mean_colour": ("patches painted in the mean colour", "图块涂成平均颜色"),
    "trust.variant.blur": ("patches blurred", "图块被模糊"),
    "trust.variant.road": ("patches imputed from their neighbours (ROAD)", "图块由相邻像素插补（ROAD）"),
    "trust.deletion": ("Deletion: most relevant removed first", "删除：最相关的图块先移除"),
    "trust.insertion": ("Insertion: most relevant kept first", "插入：最相关的图块先保留"),
}

register(PAGE, PICTURES)
