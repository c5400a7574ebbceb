"""The texts drawn into pictures: axis labels, legends, colour-bar labels, captions, titles and notes.

key -> (English, Simplified Chinese). One name per thing, in both languages: layer (层), head (头), patch
(图块), token (词元), CLS. Fields in braces are filled by ``viz.i18n.t``.
"""

PICTURES: dict[str, tuple[str, str]] = {
    # --- names used in captions and labels ---------------------------------------------------------------
    "name.layer": ("layer {layer}", "第 {layer} 层"),
    "name.head": ("head {head}", "头 {head}"),
    "name.layer_head": ("layer {layer}, head {head}", "第 {layer} 层，头 {head}"),
    "name.layer_mean": ("layer {layer}, mean of heads", "第 {layer} 层，各头平均"),
    "name.layer_stage_head": ("layer {layer} (stage {stage}), head {head}", "第 {layer} 层（第 {stage} 阶段），头 {head}"),
    "name.layer_stage_mean": ("layer {layer} (stage {stage}), mean of heads", "第 {layer} 层（第 {stage} 阶段），各头平均"),
    "name.mean_heads": ("mean of heads", "各头平均"),

    # --- the query a map reads (viz.maps.readout) and the captions that name it ------------------------------
    "query.cls": ("CLS", "CLS"),
    "query.map": ("MAP probe", "MAP 探针"),
    "query.map_all": ("MAP probe", "MAP 探针"),
    "query.mean": ("mean of patches", "图块均值"),
    "query.mean_all": ("mean of all tokens", "所有词元均值"),
    "query.cls_mean": ("CLS and mean of patches", "CLS 与图块均值"),
    "query.distilled": ("CLS and DIST", "CLS 与 DIST"),
    "caption.rollout": ("{query} rollout", "{query} 的注意力展开"),
    "caption.attention": ("{query}, {where}", "{query}，{where}"),
    "caption.probe": ("MAP probe (after layer {layer}), {heads}", "MAP 探针（第 {layer} 层之后），{heads}"),
    "caption.heads": ("{query} attention of every layer (rows) and head (columns)",
                      "每一层（行）每个头（列）的 {query} 注意力"),
    "caption.threshold": ("smallest patch set holding {share:.0%} of the mass: {source}",
                          "容纳 {share:.0%} 注意力质量的最小图块集合：{source}"),

    # --- explanation methods, short names (viz.explain.METHODS; their long titles are the page's "method_title.*") ---
    "method.gae": ("grad × attention", "梯度×注意力"),
    "method.attnlrp": ("AttnLRP relevance", "AttnLRP 相关性"),
    "method.cp_lrp": ("CP-LRP relevance", "CP-LRP 相关性"),
    "method.grad_rollout": ("gradient rollout", "梯度加权展开"),
    "method.gradcam": ("Grad-CAM", "Grad-CAM"),
    "method.attention": ("attention", "注意力"),
    "method.rollout": ("rollout", "注意力展开"),
    "method.random": ("random", "随机"),

    "colorbar.cosine": ("Cosine similarity", "余弦相似度"),
    "colorbar.similarity": ("cosine similarity to patch ({row}, {col}), layer {layer}",
                            "与图块 ({row}, {col}) 的余弦相似度，第 {layer} 层"),
    "colorbar.own_scale": ("each map on its own scale:\n0 its lowest, 1 its highest", "每张图各用自己的色标：\n0 为最低，1 为最高"),

    # --- mean attention distance (Figure 7, right) -------------------------------------------------------
    "axis.depth": ("Network depth (layer)", "网络深度（层）"),
    "axis.mean_distance": ("Mean attention distance (pixels)", "平均注意力距离（像素）"),
    "legend.uniform": ("uniform attention", "均匀注意力"),

    # --- position-embedding similarity (Figure 7, centre) ------------------------------------------------
    "axis.patch_column": ("Input patch column", "输入图块的列"),
    "axis.patch_row": ("Input patch row", "输入图块的行"),

    # --- token norms ---------------------------------------------------------------------------------------
    "axis.layer": ("Layer", "层"),
    "axis.head": ("Head", "头"),
    "axis.token_norm": ("Token L2 norm", "词元的 L2 范数"),
    "legend.patch_band": ("patches 5–95 %", "图块 5–95 % 分位"),
    "legend.patch_median": ("patch median", "图块中位数"),
    "legend.patch_max": ("patch max", "图块最大值"),
    "legend.cls": ("CLS", "CLS"),
    "legend.no_cls": ("no CLS", "无 CLS"),
    "legend.other_prefix": ("other prefix tokens ({count})", "其他前缀词元（{count} 个）"),
    "legend.flagged": ("flagged high-norm patches", "被标记的高范数图块"),

    "note.no_position_embeddings": (
        "This model has no absolute position embeddings (trained without them, or BEiT and timm's relative-position "
        "ViTs, whose positions enter inside attention as a relative bias per layer, a learnt table or one an MLP "
        "computes from each offset), so there is no Figure 7 centre to show.",
        "这个模型没有绝对位置嵌入（训练时没有使用，或者是 BEiT 和 timm 的相对位置 ViT：位置信息以每层的相对偏置在注意力"
        "内部加入，偏置来自学习得到的表，或由一个小 MLP 从每个偏移算出），因此没有图 7 中间那幅图。"),


    # --- can this map be trusted? the comparison of methods (viz.trust.figure) ----------------------------
    "trust.title": ("Can these maps be trusted?\n{target}, probability {probability:.2f}, {variant}",
                    "这些图可信吗？\n{target}，概率 {probability:.2f}，{variant}"),
    "trust.title_narrow": ("Can these maps be trusted?\n{target}, probability {probability:.2f}\n{variant}",
                           "这些图可信吗？\n{target}，概率 {probability:.2f}\n{variant}"),
    "trust.aucs": ("del {deletion:.2f} ↓  ins {insertion:.2f} ↑", "删除 {deletion:.2f} ↓  插入 {insertion:.2f} ↑"),
    "trust.flagged": ("⚠ ignores the model", "⚠ 不依赖模型"),
    "trust.axis.removed": ("fraction of patches removed", "移除的图块比例"),
    "trust.axis.kept": ("fraction of patches kept", "保留的图块比例"),
    "trust.axis.probability": ("probability of the class", "该类别的概率"),
    "trust.correlation": ("Rank correlation between maps", "各图之间的秩相关"),
    "trust.sanity": ("Sanity check:\nlayers randomised from the top", "健全性检验：\n从顶层起随机化"),
    "trust.axis.randomised": ("randomised layers", "随机化的层数"),
    "trust.axis.spearman": ("Spearman ρ with the trained map", "与训练后图的斯皮尔曼 ρ"),
    "trust.legend.threshold": ("flag at ρ ≥ {threshold}", "ρ ≥ {threshold} 时标记"),



    "fusion.mean": ("mean", "平均"),
    "fusion.max": ("max", "最大值"),
    "fusion.min": ("min", "最小值"),

}
