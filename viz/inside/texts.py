"""The Inside tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    # --- the Inside tab (vit_explorer.tabs.inside; the numbers' lines are filled by viz.inside.views) -----------
    "tab.inside": ("Inside", "模型内部"),
    "about.inside": (
        "When in depth does the model know the answer, and which parts write it? For the class picked in the Explain "
        "tab (or the top-1; with a contrast class, every number is of A − B): the **logit lens** reads the answer "
        "after every layer (nostalgebraist 2020), **direct logit attribution** splits the logit into what each head "
        "and MLP writes straight into it (Elhage et al. 2021), **head importance** removes one head at a time, and "
        "**patching** takes heads from a second photo (Meng et al. 2022; Heimersheim & Nanda 2024). The definitions "
        "are in [docs/inside.md](docs/inside.md). Runs on demand: about (heads × layers) / 2 forward passes.",
        "模型在第几层“知道”了答案？是哪些部件把答案写进去的？针对“解释”页选中的类别（默认第 1 名；若选了对比类别，所有数字都是"
        " A − B 的差）：**logit 透镜**在每一层之后读出答案（nostalgebraist 2020），**直接 logit 归因**把 logit 拆成每个头和每个"
        " MLP 直接写入的部分（Elhage 等 2021），**头的重要性**每次去掉一个头，**修补**从第二张照片取来某些头的输出（Meng 等"
        " 2022；Heimersheim 与 Nanda 2024）。定义见 [docs/inside.md](docs/inside.md)。按需运行：约（头数 × 层数）/ 2 次前向计算。"),
    "button.inside": ("Look inside", "查看模型内部"),
    "inside.progress": ("looking inside", "正在查看模型内部"),
    "picture.inside_lens": ("Logit lens: click a layer", "logit 透镜：点击某一层"),
    "picture.inside_patch_lens": ("Each patch read alone at that layer", "该层每个图块单独读出"),
    "control.inside_layer": ("Layer of the patch lens", "图块透镜的层"),
    "help.inside_layer": ("which layer's tokens are read, each patch on its own",
                          "读取哪一层的词元，每个图块单独读出"),
    "note.inside_lens": (
        "How to read it: every layer's tokens go through the **last** layer's norm and head, which were trained only "
        "on the last layer. Early layers speak a language the head was not trained to read, so a low probability "
        "there does not mean the layer knows nothing; what counts is where the answer rises. The last layer is the "
        "model's own output. The patch map reads each patch token alone through the same norm and head.",
        "怎么读：每一层的词元都经过**最后一层**的归一化和分类头读出，而它们只在最后一层上训练过。前面几层的表示不是分类头学会读的"
        "“语言”，所以那里概率低并不等于这一层什么都不知道；要看的是答案从哪一层开始上升。最后一层就是模型自己的输出。图块图把每个"
        "图块词元单独经过同样的归一化和分类头读出。"),
    "note.inside_lens_approximate": (
        "This model reads its answer with an attention pool (MAP): the lens applies that pool to every layer's "
        "tokens, but the pool was trained on the last layer only, so the early layers' readings are approximate.",
        "这个模型用注意力池化（MAP）读出答案：透镜把这个池化用在每一层的词元上，但它只在最后一层上训练过，所以前面几层的读数"
        "只是近似。"),
    "picture.inside_dla": ("Direct logit attribution: click a head", "直接 logit 归因：点击某个头"),
    "picture.inside_sources": ("What the clicked head moved, patch by patch", "所点的头从每个图块搬运了什么"),
    "note.inside_dla": (
        "How to read it: red cells write the answer up, blue ones down, and all cells plus the parts listed under "
        "the table add up to the logit exactly (the final norm's scale is held at its value on this photo). This is "
        "the **direct** effect only: a head can matter through the layers after it while writing almost nothing "
        "itself. Head importance below removes the head and shows its whole effect.",
        "怎么读：红色的格子把答案往上写，蓝色的往下写；所有格子加上表格下方列出的各部分，正好等于这个 logit（最后的归一化的缩放"
        "固定为它在这张照片上的值）。这只是**直接**效应：一个头可能自己几乎不写什么，却通过后面的层起作用。下面的“头的重要性”"
        "把头去掉，显示它的全部作用。"),
    "note.inside_mlp": ("An MLP works on each token by itself: it moves nothing between patches, so it has no such map.",
                        "MLP 对每个词元单独计算，不在图块之间搬运信息，所以没有这种图。"),
    "picture.inside_heads": ("Head importance: click heads to pick them", "头的重要性：点击以选择头"),
    "note.inside_heads": (
        "How to read it: each cell is the change of the logit when that head alone is set to zero. **Blue: removing "
        "the head lowers the answer** (the head supports it); red: removing it raises the answer. Left: exact, one "
        "ablation per head; right: the one-backward estimate (attribution patching), with their rank correlation.",
        "怎么读：每个格子是只把这个头置零时 logit 的变化。**蓝色：去掉这个头，答案变弱**（这个头支持它）；红色：去掉它，答案反而"
        "变强。左边是精确值，每个头消融一次；右边是只用一次反向传播的估计（归因修补），并给出两者的秩相关。"),
    "control.inside_ablate": ("Heads to remove together", "一起去掉的头"),
    "help.inside_ablate": ("layer.head, e.g. 9.0; clicking the head-importance table adds or removes a head",
                           "写成 层.头，例如 9.0；点击头的重要性表格也可以加入或去掉一个头"),
    "button.inside_ablate": ("Remove them", "去掉这些头"),
    "label.inside_other": ("Second photo to patch from", "用来修补的第二张照片"),
    "picture.inside_patch": ("Patching from the second photo", "从第二张照片修补"),
    "note.inside_patch": (
        "How to read it: this photo is run again with one head's output taken from the second photo's run; the cell "
        "is the share of the gap between the two photos' logits (of the class picked in the Explain tab, or else the "
        "second photo's top class) that this moves: "
        "0 nothing, 1 all of it. The wide map estimates the same share for the stream entering each layer at each "
        "token position (attribution patching); its colour scale is the patches', so the class token's column, "
        "which carries most of the answer late in depth, runs off the scale.",
        "怎么读：把这张照片再算一遍，只把某一个头的输出换成第二张照片上的输出；格子里是两张照片的 logit（“解释”页选中的类别，"
        "未选时为第二张照片的第 1 名类别）"
        "之差被搬动的比例：0 表示没有，1 表示全部。宽的那张图用归因修补估计同样的比例，对象是进入每一层的残差流在每个词元位置上"
        "的值；它的色标按图块设定，所以 CLS 词元那一列（在深层承载了大部分答案）会超出色标。"),
    "inside.line.target": ("Inside the model for **{target}**.", "针对 **{target}** 查看模型内部。"),
    "inside.line.lens": (
        "The readout ranks **{target}** first from layer {first} on ({probability:.0%} there) and among its top 5 "
        "from layer {top5}; layer {last} is the model's own output.",
        "读出从第 {first} 层起把 **{target}** 排在第 1（该层概率 {probability:.0%}），从第 {top5} 层起排在前 5；第 {last} 层"
        "就是模型自己的输出。"),
    "inside.line.lens_never": ("The readout never ranks **{target}** first; its best rank is {rank}, after layer {layer}.",
                               "读出始终没有把 **{target}** 排在第 1；最好的排名是第 {rank}，在第 {layer} 层之后。"),
    "inside.line.dla": ("Largest direct terms of the logit {logit:.2f}: {terms}.",
                        "logit {logit:.2f} 中最大的直接贡献：{terms}。"),
    "inside.line.mlp": ("MLP {layer}", "第 {layer} 层 MLP"),
    "inside.line.head": ("head {head}", "头 {head}"),
    "inside.line.separator": (", ", "，"),
    "inside.line.no_dla": (
        "Direct logit attribution is undefined for this model: its attention pool (MAP) is not linear in the tokens.",
        "这个模型没有直接 logit 归因：它的注意力池化（MAP）对词元不是线性的。"),
    "inside.line.heads": ("Removing one of these heads alone costs more than {threshold:g} logit: {heads}.",
                          "单独去掉下面任何一个头，logit 都会下降超过 {threshold:g}：{heads}。"),
    "inside.line.heads_none": ("No head alone costs more than {threshold:g} logit: the answer does not hang on one head.",
                               "没有哪个头单独去掉会让 logit 下降超过 {threshold:g}：答案不依赖某一个头。"),
    "inside.line.heads_direct": (
        "Removing one of these heads alone costs more than {threshold:g} logit: {heads}. Head {head} writes {direct:+.2f} straight into the readout, yet removing it costs {cost:.2f}: the "
        "difference is what it does through the layers after it.",
        "单独去掉下面任何一个头，logit 都会下降超过 {threshold:g}：{heads}。头 {head} 直接写入读出的只有 {direct:+.2f}，去掉它却损失 {cost:.2f}：差额就是它通过后面各层起的作用。"),
    "inside.table.model": ("the model", "原模型"),
    "inside.table.ablated": ("without {heads}", "去掉 {heads}"),
    "inside.line.ablated": ("With {heads} removed, the logit of **{target}** changes by {delta:+.2f}.",
                            "去掉 {heads} 之后，**{target}** 的 logit 变化 {delta:+.2f}。"),
    "inside.line.patch": (
        "Patching from {source} toward **{target}**: its logit is {this:.2f} on this photo and {other:.2f} on "
        "{source}. The heads that move the largest shares: {heads}.",
        "从 {source} 朝 **{target}** 修补：它的 logit 在这张照片上是 {this:.2f}，在 {source} 上是 {other:.2f}。"
        "搬动比例最大的头：{heads}。"),
    "message.inside_failed": ("Could not look inside: {error}", "无法查看模型内部：{error}"),
    "message.inside_first": ("Press “Look inside” first.", "请先点击“查看模型内部”。"),
    "message.inside_no_heads": ("Pick the heads to remove first (e.g. 9.0), or click them in the head-importance table.",
                                "请先选择要去掉的头（例如 9.0），或在头的重要性表格中点击它们。"),
    "one_sequence.inside": ("The logit lens, direct logit attribution, head importance and patching read one "
                        "residual stream through every layer; this model's stages change grid and width.",
                        "logit 透镜、直接 logit 归因、头重要性和修补读取贯穿各层的同一条残差流；这个模型的各阶段"
                        "网格和宽度都不同。"),
}

PICTURES = {
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
}

register(PAGE, PICTURES)
