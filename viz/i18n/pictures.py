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
    "name.rollout": ("rollout", "注意力展开"),
    "name.patch": ("patch ({row}, {col})", "图块 ({row}, {col})"),
    "name.norm": ("norm", "范数"),
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

    # --- colour bars ---------------------------------------------------------------------------------------
    "colorbar.uniform": ("× uniform attention (1 = 1/{tokens})", "均匀注意力的倍数（1 = 1/{tokens}）"),
    "colorbar.attends_to": ("attends to, {where}", "它关注哪里，{where}"),
    "colorbar.attended_by": ("attended by, {where}", "谁关注它，{where}"),
    "colorbar.cosine": ("Cosine similarity", "余弦相似度"),
    "colorbar.similarity": ("cosine similarity to patch ({row}, {col}), layer {layer}",
                            "与图块 ({row}, {col}) 的余弦相似度，第 {layer} 层"),
    "colorbar.similarity_other": ("cosine to the 1st photo's patch ({row}, {col}), layer {layer}",
                                  "与第一张照片图块 ({row}, {col}) 的余弦相似度，第 {layer} 层"),
    "colorbar.value": ("value", "数值"),
    "colorbar.class_map": ("{method}: {target}\n× an even share (1 = 1/{patches} of the map's total)",
                           "{method}：{target}\n平均份额的倍数（1 = 全图总量的 1/{patches}）"),
    "colorbar.signed_map": ("{method}: {target}, red for, blue against\n× an even share (1 = 1/{patches} of Σ|R|)",
                            "{method}：{target}，红色支持，蓝色反对\n平均份额的倍数（1 = Σ|R| 的 1/{patches}）"),
    "colorbar.contrast_map": ("{method}: {target} − {other}\n× an even share of {target} (1 = 1/{patches})",
                              "{method}：{target} − {other}\n{target} 平均份额的倍数（1 = 1/{patches}）"),
    "colorbar.own_scale": ("each map on its own scale:\n0 its lowest, 1 its highest", "每张图各用自己的色标：\n0 为最低，1 为最高"),
    "list.separator": (", ", "、"),
    "caption.signed_methods": ("{methods}: red for the class, blue against, white 0", "{methods}：红色支持该类别，蓝色反对，白色为 0"),
    "colorbar.norm_share": ("each layer from its smallest norm (0) to its largest\nunflagged one (1; under its number)",
                            "每层从最小范数（0）到未标记的最大范数\n（1；数值见层号下方）"),
    "colorbar.layer_share": ("share of the layer's maximum\n(its × uniform under the layer's number)",
                             "占该层最大值的比例\n（该层最大值见层号下方，单位：均匀注意力的倍数）"),

    # --- mean attention distance (Figure 7, right) -------------------------------------------------------
    "axis.depth": ("Network depth (layer)", "网络深度（层）"),
    "axis.mean_distance": ("Mean attention distance (pixels)", "平均注意力距离（像素）"),
    "legend.uniform": ("uniform attention", "均匀注意力"),
    "title.mean_over_images": ("mean over {count} images", "{count} 张图像的平均"),

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

    # --- notes under or on maps ----------------------------------------------------------------------------
    "caption.crop": ("what the model saw", "模型看到的区域"),
    "note.no_position_embeddings": (
        "This model has no absolute position embeddings (trained without them, or BEiT and timm's relative-position "
        "ViTs, whose positions enter inside attention as a relative bias per layer, a learnt table or one an MLP "
        "computes from each offset), so there is no Figure 7 centre to show.",
        "这个模型没有绝对位置嵌入（训练时没有使用，或者是 BEiT 和 timm 的相对位置 ViT：位置信息以每层的相对偏置在注意力"
        "内部加入，偏置来自学习得到的表，或由一个小 MLP 从每个偏移算出），因此没有图 7 中间那幅图。"),
    "title.rotary_kernel": (
        "No position table: this model rotates queries and keys by position (RoPE).\n"
        "Shown: the similarity its rotation implies (mean cos of the angle differences)",
        "没有位置表：这个模型按位置旋转查询和键（RoPE）。\n图中是旋转本身带来的位置相似度（角度差余弦的平均）"),

    # --- captions and axes of the guided walk's pictures (viz.drawing.walk_steps) -------------------------
    "walk.caption.grid": ("{shape} → {grid} patches", "{shape} → {grid} 个图块"),
    "walk.caption.pixels": ("its pixels ({patch}×{patch}×{channels})", "它的像素（{patch}×{patch}×{channels}）"),
    "walk.caption.numbers": ("as {values} numbers, in the order the projection reads them: channel by channel, "
                             "row by row",
                             "展平成 {values} 个数，按投影读取的顺序：一个通道接一个通道，逐行排列"),
    "walk.caption.embedding": ("its embedding: {dim} numbers", "它的嵌入：{dim} 个数"),
    "walk.caption.tokens": ("{tokens} tokens × {dim} numbers", "{tokens} 个词元 × {dim} 个数"),
    "walk.axis.token": ("token", "词元"),
    "walk.axis.dimension": ("dimension", "维度"),
    "walk.axis.logit": ("logit", "logit"),
    "walk.axis.probability": ("probability", "概率"),
    "walk.legend.logit": ("logit", "logit"),
    "walk.legend.probability": ("probability after softmax", "softmax 之后的概率"),

    # --- can this map be trusted? the comparison of methods (viz.drawing.trust) ----------------------------
    "trust.title": ("Can these maps be trusted?\n{target}, probability {probability:.2f}, {variant}",
                    "这些图可信吗？\n{target}，概率 {probability:.2f}，{variant}"),
    "trust.title_narrow": ("Can these maps be trusted?\n{target}, probability {probability:.2f}\n{variant}",
                           "这些图可信吗？\n{target}，概率 {probability:.2f}\n{variant}"),
    "trust.variant.tokens": ("patches dropped from the tokens", "图块从词元序列中移除"),
    "trust.variant.mean_colour": ("patches painted in the mean colour", "图块涂成平均颜色"),
    "trust.variant.blur": ("patches blurred", "图块被模糊"),
    "trust.variant.road": ("patches imputed from their neighbours (ROAD)", "图块由相邻像素插补（ROAD）"),
    "trust.aucs": ("del {deletion:.2f} ↓  ins {insertion:.2f} ↑", "删除 {deletion:.2f} ↓  插入 {insertion:.2f} ↑"),
    "trust.flagged": ("⚠ ignores the model", "⚠ 不依赖模型"),
    "trust.deletion": ("Deletion: most relevant removed first", "删除：最相关的图块先移除"),
    "trust.insertion": ("Insertion: most relevant kept first", "插入：最相关的图块先保留"),
    "trust.axis.removed": ("fraction of patches removed", "移除的图块比例"),
    "trust.axis.kept": ("fraction of patches kept", "保留的图块比例"),
    "trust.axis.probability": ("probability of the class", "该类别的概率"),
    "trust.correlation": ("Rank correlation between maps", "各图之间的秩相关"),
    "trust.sanity": ("Sanity check:\nlayers randomised from the top", "健全性检验：\n从顶层起随机化"),
    "trust.axis.randomised": ("randomised layers", "随机化的层数"),
    "trust.axis.spearman": ("Spearman ρ with the trained map", "与训练后图的斯皮尔曼 ρ"),
    "trust.legend.threshold": ("flag at ρ ≥ {threshold}", "ρ ≥ {threshold} 时标记"),

    # --- a model learning to see (viz.dynamics) ------------------------------------------------------------------
    "dynamics.caption": ("{name}: epoch {epoch} | validation accuracy {accuracy:.3f} | {position} | this photo: "
                         "{label} ({probability:.2f})",
                         "{name}：第 {epoch} 轮 | 验证准确率 {accuracy:.3f} | {position} | 这张照片：{label}（{probability:.2f}）"),
    "dynamics.no_position": ("no position embedding", "没有位置嵌入"),
    "dynamics.no_position_text": ("No position embedding (pos_embed_kind 'none'): nothing to show.",
                                  "没有位置嵌入（pos_embed_kind 为 'none'）：这里没有可显示的内容。"),
    "dynamics.rollout": ("rollout (CLS)", "注意力展开（CLS）"),
    "dynamics.rollout_bar": ("× an even share of the patches", "图块平均份额的倍数"),
    "dynamics.position": ("position embedding similarity", "位置嵌入相似度"),
    "dynamics.distance": ("mean attention distance (dot: head)", "平均注意力距离（点：头）"),
    "dynamics.layer": ("layer", "层"),
    "dynamics.pixels": ("pixels", "像素"),
    "dynamics.epoch": ("epoch", "训练轮数"),
    "dynamics.run": ("the run", "训练过程"),
    "dynamics.accuracy": ("validation accuracy", "验证准确率"),

    # --- the depth animation's frames (viz.animate.display_frames) ----------------------------------------------
    "frame.attention": ("layer {layer} of 0–{last}: {query} attention, {heads}",
                        "第 {layer} 层（0–{last}）：{query} 注意力，{heads}"),
    "frame.rollout": ("layer {layer} of 0–{last}: rollout of layers 0–{layer}",
                      "第 {layer} 层（0–{last}）：第 0–{layer} 层的注意力展开"),

    # --- two checkpoints on one photo (viz.compare) ------------------------------------------------------------
    "compare.title": ("A: {a}    vs    B: {b}", "A：{a}    对比    B：{b}"),
    "compare.top_a": ("A's top-{k}, with B's probability (Δ = B − A)", "A 的前 {k} 个类别及 B 的概率（Δ = B − A）"),
    "compare.top_b": ("B's top-{k}, with A's probability (Δ = B − A)", "B 的前 {k} 个类别及 A 的概率（Δ = B − A）"),
    "compare.probability": ("probability", "概率"),
    "compare.depth": ("Network depth (layer)", "网络深度（层）"),
    "compare.distance": ("Mean attention distance\n({unit})", "平均注意力距离\n（{unit}）"),
    "compare.unit": ("pixels of A's {height}×{width} input", "A 的 {height}×{width} 输入的像素"),
    "compare.dots": ("dots: heads, line: mean of heads", "点：各头，线：各头平均"),
    "compare.rollout": ("rollout ({fusion} fusion{discard})", "注意力展开（各头取{fusion}{discard}）"),
    "compare.discard": (", discard {ratio:g}", "，丢弃 {ratio:g}"),
    "compare.attention": ("{query} attention, layer {la} of A / {lb} of B, {heads}",
                          "{query} 注意力，A 的第 {la} 层 / B 的第 {lb} 层，{heads}"),
    "compare.map_a": ("A: {title}", "A：{title}"),
    "compare.map_b": ("B: {title}", "B：{title}"),
    "compare.difference": ("B − A (total variation {tv:.3f})", "B − A（总变差 {tv:.3f}）"),
    "compare.box": ("x {x0:.0f}–{x1:.0f}, y {y0:.0f}–{y1:.0f}", "x {x0:.0f}–{x1:.0f}，y {y0:.0f}–{y1:.0f}"),
    "compare.same_crop": ("Both models saw the same centre crop of the {width}×{height} photo ({box})",
                          "两个模型看到的是 {width}×{height} 照片的同一个中心裁剪（{box}）"),
    "compare.other_crops": ("A saw {a} and B saw {b} of the {width}×{height} photo: compared on their common centre "
                            "crop, {box}",
                            "在 {width}×{height} 的照片上，A 看到 {a}，B 看到 {b}：在两者共同的中心区域 {box} 上比较"),
    "compare.resampled": ("{where}. Every map is resampled bilinearly from its own patch grid (A {ga}, B {gb}) onto the "
                          "same {width}×{height} pixels and divided by its mean there (1 = a uniform map); B − A > 0 "
                          "where B puts more of its mass.",
                          "{where}。每张图都从自己的图块网格（A {ga}，B {gb}）双线性重采样到同样的 {width}×{height} 像素上，"
                          "再除以它在那里的均值（1 = 均匀分布的图）；B − A > 0 表示 B 在那里放了更多的质量。"),
    "compare.not_available": ("Δ n/a", "Δ 无"),
    "fusion.mean": ("mean", "平均"),
    "fusion.max": ("max", "最大值"),
    "fusion.min": ("min", "最小值"),

    # --- inside the model: logit lens, direct logit attribution, head importance, patching (viz.inside) ------------
    "inside.lens.title": ("Logit lens: the readout after each layer (target: {target})",
                          "logit 透镜：每一层之后的读出（目标：{target}）"),
    "inside.lens.axis.probability": ("probability of the target", "目标的概率"),
    "inside.lens.legend.probability": ("target's probability", "目标的概率"),
    "inside.lens.legend.rank": ("target's rank (right axis)", "目标的排名（右轴）"),
    "inside.lens.axis.rank": ("rank of the target (1 = top)", "目标的排名（1 = 第一）"),
    "inside.lens.patches": ("Each patch read alone: its own top-1 class", "每个图块单独读出：它自己的第一类别"),
    "inside.lens.other": ("other classes", "其他类别"),
    "inside.lens.approximate": ("MAP probe read at every layer: approximate in early layers",
                                "在每一层读取 MAP 探针：前面几层只是近似"),
    "inside.dla.title": ("Direct logit attribution of {target}: logit {logit:.2f}",
                         "{target} 的直接 logit 归因：logit {logit:.2f}"),
    "inside.dla.parts": ("embedding {embedding:+.2f}, attention biases {bias:+.2f}, heads {heads:+.2f}, MLPs {mlp:+.2f}, "
                         "head bias {head_bias:+.2f} = {total:.2f}",
                         "嵌入 {embedding:+.2f}，注意力偏置 {bias:+.2f}，各头 {heads:+.2f}，MLP {mlp:+.2f}，"
                         "分类头偏置 {head_bias:+.2f} = {total:.2f}"),
    "inside.dla.colorbar": ("logit written into the readout", "写入读出的 logit"),
    "inside.dla.mlp": ("MLP", "MLP 层"),
    "inside.dla.sources": ("What head {layer}.{head} moved, per source patch (its term {value:+.2f})",
                           "头 {layer}.{head} 从每个源图块搬运的量（它的贡献 {value:+.2f}）"),
    "inside.dla.prefix": ("from prefix tokens {value:+.2f}", "来自前缀词元 {value:+.2f}"),
    "inside.heads.title": ("Head importance: change of the {target} logit when one head is ablated ({ablation})",
                           "头的重要性：消融一个头时 {target} 的 logit 变化（{ablation}）"),
    "inside.heads.exact": ("exact (one ablation at a time)", "精确（每次消融一个头）"),
    "inside.heads.linear": ("attribution patching (one backward)", "归因修补（一次反向传播）"),
    "inside.heads.spearman": ("Spearman ρ = {rho:.2f}", "斯皮尔曼 ρ = {rho:.2f}"),
    "inside.heads.colorbar": ("Δ logit without the head\n(blue: the head helped)", "去掉该头后的 Δ logit\n（蓝色：该头有帮助）"),
    "inside.ablation.zero": ("set to zero", "置零"),
    "inside.ablation.mean": ("set to the reference mean", "替换为参考均值"),
    "inside.patch.title": ("Patching from {source}: share of the {target} logit difference moved",
                           "从 {source} 修补：{target} 的 logit 差被搬动的比例"),
    "inside.patch.heads": ("each head (exact)", "每个头（精确）"),
    "inside.patch.residual": ("stream entering each layer, per token (attribution patching)",
                              "进入每一层的残差流，按词元（归因修补）"),
    "inside.patch.axis.token": ("token position (prefix | patches)", "词元位置（前缀 | 图块）"),
    "inside.patch.colorbar": ("share moved (1 = all of it)", "被搬动的比例（1 = 全部）"),
    # a Swin's pictures (viz.panels.windows)
    "swin.where": ("layer {layer} (stage {stage}), {who}", "第 {layer} 层（第 {stage} 阶段），{who}"),
    "swin.mean_heads": ("mean of heads", "各头平均"),
    "swin.layer": ("layer {layer}", "第 {layer} 层"),
    "swin.stage": ("stage {stage}", "第 {stage} 阶段"),
    "swin.stage_title": ("stage {stage}, one scale {low}–{high}", "第 {stage} 阶段，同一色标 {low}–{high}"),
    "swin.distance_title": ("Mean attention distance of every head, by layer", "每个头的平均注意力距离（按层）"),
    "swin.axis_layer": ("Layer (all stages, in order)", "层（所有阶段，依次）"),
    "swin.norms_title": ("Token norms after every layer", "每一层之后的词元范数"),
    "swin.norm_range": ("lowest to highest token", "最小到最大的词元"),
    "swin.norm_median": ("median token", "词元中位数"),
    "swin.rollout_caption": ("rollout through windows and merges, read by the average pool",
                             "穿过窗口与图层合并的注意力展开，由平均池化读出"),
    "swin.pool_caption": ("average pool's attention, {where}", "平均池化的注意力，{where}"),
}
