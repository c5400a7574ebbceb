"""The Learn tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    # --- the guided walk through the ViT: a title and one sentence per step (viz.drawing.walk_steps.step_texts) ---
    "walk.crop.title": ("1. The crop the model sees", "1. 模型看到的裁剪图像"),
    "walk.crop.text": (
        "The photo is resized so that its shorter side is {resize} pixels and the centre is cut out: this "
        "{shape} array of pixels is all the model sees.",
        "照片先缩放到短边 {resize} 像素，再裁出中心部分：模型看到的只有这个 {shape} 的像素数组。"),
    "walk.squash.text": (
        "The photo is stretched to {size} pixels whatever its shape (its aspect ratio is not kept): this {shape} "
        "array of pixels (its centre, if smaller) is all the model sees.",
        "照片不论形状都被拉伸到 {size} 像素（不保持长宽比）：模型看到的只有这个 {shape} 的像素数组（若更小，则是它的中心部分）。"),
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
    "walk.cls.none": (
        "This model has no CLS token: the {count} patch tokens go on alone ({shape}).",
        "这个模型没有 CLS 词元：{count} 个图块词元直接进入下一步（{shape}）。"),
    "walk.position.title": ("6. Position embeddings added", "6. 加上位置嵌入"),
    "walk.position.text": (
        "Attention by itself ignores order, so a learnt position embedding is added to every token "
        "(z₀ = [x_class; x¹E; …; xᴺE] + E_pos, {shape}); nearby patches learn similar embeddings, as their "
        "cosine similarity shows.",
        "注意力本身不管顺序，所以每个词元都加上一个学到的位置嵌入（z₀ = [x_class; x¹E; …; xᴺE] + E_pos，{shape}）；"
        "相邻图块学到的嵌入很相似，余弦相似度图显示了这一点。"),
    "walk.position.rotary": (
        "This model adds no position embedding ({shape}): every layer rotates the patches' queries and keys by their "
        "position (RoPE), so q·k depends on how far apart two patches are. The picture shows how alike the rotation "
        "leaves one vector at the framed patch and at every other.",
        "这个模型不加位置嵌入（{shape}）：每一层都按位置旋转图块的查询和键（RoPE），所以 q·k 取决于两个图块相隔多远。"
        "图中是同一个向量在框出的图块和其他每个图块上被旋转后有多相似。"),
    "walk.position.none": (
        "This model adds no position embedding ({shape}): its positions enter inside attention, as a learnt bias "
        "for every offset between two patches (BEiT), so there is no similarity of positions to show.",
        "这个模型不加位置嵌入（{shape}）：位置信息在注意力内部加入，是每个图块间偏移量对应的一个学到的偏置（BEiT），"
        "因此没有位置相似度可以显示。"),
    "walk.blocks.title": ("7. {depth} encoder layers", "7. {depth} 个编码器层"),
    "walk.blocks.text": (
        "In every layer each token attends to all {tokens} tokens through {heads} heads (LayerNorm, multi-head "
        "self-attention, then an MLP, each with a residual connection); the shape stays {shape}. The picture "
        "shows where the CLS token attends in layer {layer}: attention {attention}.",
        "每一层里，每个词元通过 {heads} 个头关注全部 {tokens} 个词元（层归一化、多头自注意力，再接 MLP，"
        "都带残差连接）；形状保持 {shape}。图中是第 {layer} 层里 CLS 词元关注的位置：注意力 {attention}。"),
    "walk.blocks.artifacts": (
        "The brightest spots here are not on the object: {count} high-norm artifact tokens take {share:.0%} of "
        "this map. Large ViTs store global information in a few background patches, whose tokens grow very long and "
        "draw the attention (Darcet et al. 2023); the **Token norms** tab shows them, and “Mask high-norm artifact "
        "tokens” under *How maps are drawn* leaves them out of the other maps ([more](docs/maps.md)).",
        "这里最亮的地方并不是物体：{count} 个高范数伪影词元占了这张图 {share:.0%} 的注意力。ViT 会把全局信息存放在少数背景图块里，"
        "它们的词元变得很长并吸走注意力（Darcet 等 2023）；“**词元范数**”页显示了它们，“热力图的画法”下的“屏蔽高范数伪影词元”"
        "会把它们从其他热力图中去掉（[详细说明](docs/maps.md)）。"),
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
    "tab.learn": ("Learn", "学习"),
    "about.learn": (
        "The ViT paper step by step on your photo: every shape is the shape of a real tensor of this model. Step "
        "through with Back and Next; the layer slider picks the layer of step 7.",
        "在你的照片上一步一步走完 ViT 论文：每个形状都是这个模型里真实张量的形状。用“上一步”“下一步”浏览；"
        "层滑块选择第 7 步显示哪一层。"),
    "control.step": ("Step", "步骤"),
    "help.step": ("which step of the forward pass to show", "显示前向计算的哪一步"),
    "button.back": ("Back", "上一步"),
    "button.next": ("Next", "下一步"),
    "walk.table_header": ("| step | shape |\n|---|---|", "| 步骤 | 形状 |\n|---|---|"),
    "picture.step": ("This step on your photo", "这一步在你的照片上"),
    "learn.stages": ("This model's walk is its stages: the photo cut into patches, layers that attend inside windows (every "
                   "other one shifted by half a window), 2×2 merging between stages, then the average pool and the "
                   "head. This photo's shapes:",
                   "这个模型的流程就是它的各个阶段：照片切成图块，各层在窗口内做注意力（每隔一层平移半个窗口），阶段之间"
                   "2×2 合并，最后平均池化和分类头。这张照片的形状："),
}

PICTURES = {
    # --- captions and axes of the guided walk's pictures (viz.drawing.walk_steps) -------------------------
    "walk.caption.grid": ("{shape} → {grid} patches", "{shape} → {grid} 个图块"),
    "walk.caption.pixels": ("its pixels ({patch}×{patch}×{channels})", "它的像素（{patch}×{patch}×{channels}）"),
    "walk.caption.numbers": ("as {values} numbers, in the order the projection reads them: channel by channel, "
                             "row by row",
                             "展平成 {values} 个数，按投影读取的顺序：一个通道接一个通道，逐行排列"),
    "walk.caption.embedding": ("its embedding: {dim} numbers", "它的嵌入：{dim} 个数"),
    "walk.caption.tokens": ("{tokens} tokens × {dim} numbers", "{tokens} 个词元 × {dim} 个数"),
    "walk.axis.logit": ("logit", "logit"),
    "walk.axis.probability": ("probability", "概率"),
    "walk.legend.logit": ("logit", "logit"),
    "walk.legend.probability": ("probability after softmax", "softmax 之后的概率"),
}

register(PAGE, PICTURES)
