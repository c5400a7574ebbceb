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

    # --- colour bars ---------------------------------------------------------------------------------------
    "colorbar.uniform": ("× uniform attention (1 = 1/{tokens})", "均匀注意力的倍数（1 = 1/{tokens}）"),
    "colorbar.attends_to": ("attends to, {where}", "它关注哪里，{where}"),
    "colorbar.attended_by": ("attended by, {where}", "谁关注它，{where}"),
    "colorbar.cosine": ("Cosine similarity", "余弦相似度"),
    "colorbar.value": ("value", "数值"),

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
    "note.artifacts_dominate": (
        "{share:.0%} of this map lies on {count} high-norm artifact tokens, not on the object: see Token norms, "
        "or mask them.",
        "此图 {share:.0%} 的注意力落在 {count} 个高范数伪影词元上，而不在物体上：见“词元范数”页，或将它们屏蔽。"),
    "note.artifacts_masked": (
        "{count} high-norm artifact tokens are masked: their attention is left out and the rest renormalised.",
        "已屏蔽 {count} 个高范数伪影词元：去掉它们的注意力后，其余部分重新归一化。"),
    "note.query_masked": (
        "Patch ({row}, {col}) is a high-norm artifact token and is masked out: untick the mask to query it.",
        "图块 ({row}, {col}) 是高范数伪影词元，已被屏蔽：取消屏蔽后才能查询它。"),
    "note.enlarged": (
        "This photo is only {width}×{height} pixels: it was enlarged {factor:.1f}× before the {crop} crop, so the "
        "model saw blurred pixels.",
        "这张照片只有 {width}×{height} 像素：裁剪成 {crop} 之前被放大了 {factor:.1f} 倍，模型看到的是模糊的像素。"),
    "note.crop": (
        "The model sees only the outlined {crop} crop; everything outside it is cut away.",
        "模型只看到框内 {crop} 的裁剪区域，框外的部分都被裁掉了。"),
    "note.heads_scale": (
        "One colour scale for every thumbnail, in multiples of uniform attention (1 = 1/{tokens}).",
        "所有缩略图共用一个色标，单位是均匀注意力的倍数（1 = 1/{tokens}）。"),
    "note.head_info": (
        "layer {layer}, head {head}: mean attention distance {distance:.0f} pixels, entropy {entropy:.2f} bits "
        "({share:.0%} of the maximum {maximum:.2f})",
        "第 {layer} 层，头 {head}：平均注意力距离 {distance:.0f} 像素，熵 {entropy:.2f} 比特"
        "（最大值 {maximum:.2f} 的 {share:.0%}）"),
    "caption.crop": ("what the model saw", "模型看到的区域"),

    # --- the guided walk through the ViT (viz.walkthrough) -------------------------------------------------
    "walk.crop.title": ("1. The crop the model sees", "1. 模型看到的裁剪图像"),
    "walk.crop.text": (
        "The photo is resized so that its shorter side is {resize} pixels and the centre is cut out: this "
        "{shape} array of pixels is all the model sees.",
        "照片先缩放到短边 {resize} 像素，再裁出中心部分：模型看到的只有这个 {shape} 的像素数组。"),
    "walk.patches.title": ("2. Cut into patches", "2. 切成图块"),
    "walk.patches.text": (
        "The image is cut into a {grid} grid of {patch}×{patch} pixel patches, N = {count} of them, read row by "
        "row like the words of a sentence: {shape}.",
        "图像被切成 {grid} 个 {patch}×{patch} 像素的图块，共 N = {count} 个，像句子里的词一样逐行读入：{shape}。"),
    "walk.flatten.title": ("3. One patch, flattened", "3. 把一个图块展平"),
    "walk.flatten.text": (
        "Patch ({row}, {col}) becomes one row of {patch}·{patch}·{channels} = {values} numbers: the transformer "
        "never sees it as a square.",
        "图块 ({row}, {col}) 被展平成一行 {patch}·{patch}·{channels} = {values} 个数：Transformer 从不把它当作方块来看。"),
    "walk.projection.title": ("4. Linear projection to D = {dim}", "4. 线性投影到 D = {dim} 维"),
    "walk.projection.text": (
        "One learnt matrix E maps every flattened patch to a vector of D = {dim} numbers, its patch embedding "
        "({shape}); a {patch}×{patch} convolution with stride {patch} computes exactly this.",
        "一个学到的矩阵 E 把每个展平的图块映射成 D = {dim} 个数的向量，即图块嵌入（{shape}）；"
        "步长为 {patch} 的 {patch}×{patch} 卷积做的正是这件事。"),
    "walk.cls.title": ("5. The CLS token prepended", "5. 在前面加上 CLS 词元"),
    "walk.cls.text": (
        "A learnt {names} token is put in front of the patches ({shape}); after the last layer its vector alone "
        "classifies the image, like BERT's [class] token.",
        "在图块前面加上一个学到的 {names} 词元（{shape}）；最后一层之后，只用它的向量来给整张图像分类，"
        "就像 BERT 的 [class] 词元。"),
    "walk.position.title": ("6. Position embeddings added", "6. 加上位置嵌入"),
    "walk.position.text": (
        "Attention by itself ignores order, so a learnt position embedding is added to every token "
        "(z₀ = [x_class; x¹E; …; xᴺE] + E_pos, {shape}); nearby patches learn similar embeddings, as their "
        "cosine similarity shows.",
        "注意力本身不管顺序，所以每个词元都加上一个学到的位置嵌入（z₀ = [x_class; x¹E; …; xᴺE] + E_pos，{shape}）；"
        "相邻图块学到的嵌入很相似，余弦相似度图显示了这一点。"),
    "walk.blocks.title": ("7. {depth} encoder layers", "7. {depth} 个编码器层"),
    "walk.blocks.text": (
        "In every layer each token attends to all {tokens} tokens through {heads} heads (LayerNorm, multi-head "
        "self-attention, then an MLP, each with a residual connection); the shape stays {shape}. The picture "
        "shows where the CLS token attends in layer {layer}: attention {attention}.",
        "每一层里，每个词元通过 {heads} 个头关注全部 {tokens} 个词元（层归一化、多头自注意力，再接 MLP，"
        "都带残差连接）；形状保持 {shape}。图中是第 {layer} 层里 CLS 词元关注的位置：注意力 {attention}。"),
    "walk.output.title": ("8. The CLS output", "8. CLS 的输出"),
    "walk.output.text": (
        "After the last layer a LayerNorm is applied and the CLS token's vector is taken out (y = LN(z_L⁰), "
        "{shape}): {dim} numbers that summarise the whole image.",
        "最后一层之后做一次层归一化，取出 CLS 词元的向量（y = LN(z_L⁰)，{shape}）：用 {dim} 个数概括整张图像。"),
    "walk.output.text_avg": (
        "After the last layer the patch tokens are averaged and normalised ({shape}): {dim} numbers that "
        "summarise the whole image (this model pools instead of using CLS).",
        "最后一层之后对图块词元取平均并归一化（{shape}）：用 {dim} 个数概括整张图像（这个模型用平均池化而不用 CLS）。"),
    "walk.logits.title": ("9. Logits and softmax", "9. logits 与 softmax"),
    "walk.logits.text": (
        "A linear head turns these numbers into {classes} logits ({shape}), one per class, and softmax turns the "
        "logits into probabilities that sum to 1: here the top class is {label} ({probability:.0%}).",
        "一个线性分类头把这些数变成 {classes} 个 logits（{shape}），每个类别一个，softmax 再把它们变成和为 1 "
        "的概率：这里概率最高的类别是 {label}（{probability:.0%}）。"),
    "walk.caption.grid": ("{shape} → {grid} patches", "{shape} → {grid} 个图块"),
    "walk.caption.pixels": ("its pixels ({patch}×{patch}×{channels})", "它的像素（{patch}×{patch}×{channels}）"),
    "walk.caption.numbers": ("as {values} numbers (R, G, B of each pixel, row by row)",
                             "展平成 {values} 个数（逐行，每个像素的 R、G、B）"),
    "walk.caption.embedding": ("its embedding: {dim} numbers", "它的嵌入：{dim} 个数"),
    "walk.caption.tokens": ("{tokens} tokens × {dim} numbers", "{tokens} 个词元 × {dim} 个数"),
    "walk.axis.token": ("token", "词元"),
    "walk.axis.dimension": ("dimension", "维度"),
    "walk.axis.logit": ("logit", "logit"),
    "walk.axis.probability": ("probability", "概率"),
    "walk.legend.logit": ("logit (left axis)", "logit（左轴）"),
    "walk.legend.probability": ("probability after softmax (right axis)", "softmax 之后的概率（右轴）"),
}
