"""The Concepts tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``): the
pictures' texts (``concepts.picture.*``, drawn in ``viz.concepts.pictures`` in the picture's language), the view's
lines and the messages a person gets. One name per thing: latent (潜变量), concept (概念), patch (图块), layer (层),
SAE (稀疏自编码器, SAE)."""
from ..i18n import register

PICTURES: dict[str, tuple[str, str]] = {     # drawn into pictures: in English where Chinese cannot be drawn
    "concepts.picture.latent": ("latent {latent}", "潜变量 {latent}"),
    "concepts.picture.latent_label": ("latent {latent}: {label}", "潜变量 {latent}：{label}"),
    "concepts.picture.map_caption": ("{name} · mean {mean:.3g} · max {max:.3g}", "{name} · 均值 {mean:.3g} · 最大 {max:.3g}"),
    "concepts.picture.colorbar": ("activation", "激活值"),
    "concepts.picture.strongest_title": ("The photo's {count} strongest concepts at layer {layer} ({hook}): where each "
                                         "fires, and the folder's patches where it fires most",
                                         "第 {layer} 层（{hook}）上这张照片最强的 {count} 个概念：各自在哪里激活，以及"
                                         "文件夹里它激活最强的图块"),
    "concepts.picture.top_title": ("{name}: its {count} strongest patches in the training folder (framed)",
                                   "{name}：训练文件夹中它激活最强的 {count} 个图块（方框标出）"),
    "concepts.picture.no_top": ("no top patches to show (top_patches.npz or the photo folder is missing)",
                                "没有可显示的最强图块（缺少最强图块的文件或照片文件夹）"),
    "concepts.picture.no_fire": ("fires on no patch of the folder", "在文件夹的任何图块上都不激活"),
    "concepts.picture.rollout_before": ("rollout, the model as it is", "注意力展开：原模型"),
    "concepts.picture.rollout_after": ("rollout, {change}", "注意力展开：{change}"),
    "concepts.picture.removed": ("what {name} wrote into the patches (norm)", "{name} 写入各图块的内容（范数）"),
}

PAGE: dict[str, tuple[str, str]] = {      # the view's lines and the messages a person gets
    # --- the Concepts tab (vit_explorer.tabs.concepts) ------------------------------------------------------------
    "tab.concepts": ("Concepts", "概念"),
    "about.concepts": (
        "Attention says where the model looks; a **sparse autoencoder** (SAE) on one layer's patch tokens says what it "
        "sees there. It rewrites every patch as a few **latents** out of a large dictionary, and a latent that fires "
        "on few patches tends to be one thing: a texture, a part, a colour. Each row below is one of the photo's "
        "strongest latents: where it fires on your photo (its own colour scale, from 0 to its largest activation) and, "
        "beside it, the patches of the photos the SAE was trained on where it fires most (framed in green). Click a "
        "row for that latent's 64 strongest patches, click a patch of the photo for the latents active there, and "
        "switch a latent off (or scale it) to see what the answer depended on. A latent means what its top patches "
        "show, not what its label says: look at them before you name it. How SAEs are trained and measured: "
        "docs/concepts.md.",
        "注意力说明模型看哪里；在某一层图块词元上训练的**稀疏自编码器**（SAE）说明它在那里看到了什么。它把每个图块改写成"
        "一个大词典中少数几个**潜变量**之和；只在少数图块上激活的潜变量往往对应一种东西：一种纹理、一个部位、一种颜色。"
        "下面每一行是这张照片最强的一个潜变量：它在你的照片上哪里激活（各自的色标，从 0 到它的最大激活值），旁边是训练"
        "这个 SAE 的照片中它激活最强的图块（绿色方框标出）。点击一行，看这个潜变量最强的 64 个图块；点击照片上的一个"
        "图块，看在那里激活的潜变量；关闭（或缩放）一个潜变量，看模型的回答依赖于什么。潜变量的含义由它最强的图块说明，"
        "而不是由它的标签说明：先看这些图块再给它命名。SAE 怎样训练和衡量，见 docs/concepts.md。"),
    "control.concepts_sae": ("SAE (sparse autoencoder)", "稀疏自编码器（SAE）"),
    "help.concepts_sae": ("those made for this model, with the layer each reads: the server's list",
                          "为这个模型训练的 SAE，以及各自读取的层：服务器的列表"),
    "control.concepts_latent": ("Latent", "潜变量"),
    "help.concepts_latent": ("the photo's strongest first (then those at the clicked patch); click a row of the "
                             "picture above, or type any latent's number",
                             "先列这张照片最强的潜变量（然后是所点图块上的）；也可以点击上面图中的一行，或输入任何潜变量的编号"),
    "control.concepts_factor": ("Factor", "倍数"),
    "help.concepts_factor": ("0 switches the latent off; 2 doubles what it adds to every patch at its layer",
                             "0 表示关闭这个潜变量；2 表示它在所在层给每个图块加上的内容加倍"),
    "button.concepts_edit": ("Switch it off or scale it: see the answer change", "关闭或缩放它：看回答如何变化"),
    "picture.concepts_strongest": ("The photo's strongest concepts (click a row)", "这张照片最强的概念（点击一行）"),
    "picture.concepts_top": ("The latent's strongest patches in the training photos", "这个潜变量在训练照片中最强的图块"),
    "picture.concepts_photo": ("Click a patch: the latents active there", "点击一个图块：在那里激活的潜变量"),
    "picture.concepts_edit": ("Rollout before and after the change", "改变前后的注意力展开"),
    "label.concepts_top5": ("Top-5 with the change", "改变后的前五类"),
    "concepts.choice.sae": ("{name} · layer {layer}, {latents} latents", "{name} · 第 {layer} 层，{latents} 个潜变量"),
    "concepts.choice.latent": ("#{latent}{label} · mean {mean:.3g}", "#{latent}{label} · 均值 {mean:.3g}"),
    "concepts.choice.at_patch": ("#{latent}{label} · {value:.3g} at patch ({row}, {col})",
                                 "#{latent}{label} · 图块 ({row}, {col}) 上为 {value:.3g}"),
    "concepts.line.metrics": ("On photos it was not trained on ({photos}), it leaves {fvu:.1%} of the tokens' variance "
                              "unexplained with {l0:.3g} latents a patch (PCA with {pca_k} components: {pca:.1%}); "
                              "{dead:.1%} of its latents never fire there.",
                              "在未参与训练的照片上（{photos} 张），它每个图块用 {l0:.3g} 个潜变量，未解释的词元方差为 "
                              "{fvu:.1%}（用 {pca_k} 个主成分的主成分分析：{pca:.1%}）；{dead:.1%} 的潜变量在那里从不"
                              "激活。"),
    "concepts.line.fvu_worse": ("Above 100 %, it reconstructs those tokens worse than their mean alone would: its "
                                "latents are not yet worth reading. Train it on more photos or for more epochs.",
                                "超过 100% 表示它重建这些词元还不如只用它们的均值：它的潜变量还不值得解读。请用更多照片"
                                "或更多轮次训练它。"),
    "concepts.line.pick_patch": ("Click a patch of the photo to see the latents active there.",
                                 "点击照片上的一个图块，看在那里激活的潜变量。"),
    "concepts.line.masked": ("Both rollouts leave out the high-norm artifact tokens, as the Rollout tab does (untick "
                             "“mask high-norm artifact tokens” to keep them).",
                             "两张注意力展开图都去掉了高范数伪影词元，与“注意力展开”页相同（取消勾选“屏蔽高范数伪影词元”"
                             "可保留它们）。"),
    "concepts.line.edit_first": ("Pick a latent and a factor, then press the button: the model runs again from the "
                                 "SAE's layer with that latent switched off or scaled.",
                                 "选一个潜变量和一个倍数，然后点击按钮：模型会从 SAE 所在的层起，在关闭或缩放这个潜变量"
                                 "之后重新运行。"),
    "note.concepts_none": (
        "No SAE on this server is made for this model ({model}). Train one on a folder of photos (minutes on a "
        "laptop), then start the app with it:\n\n```\n{commands}\n```",
        "本服务器上没有为这个模型（{model}）训练的稀疏自编码器。用一个照片文件夹训练一个（在笔记本电脑上几分钟），"
        "然后带上它启动本应用：\n\n```\n{commands}\n```"),
    "note.concepts_typed": ("On your own machine you can also type the folder of an SAE into the box above.",
                            "在你自己的电脑上，也可以在上面的框中输入一个 SAE 所在的文件夹。"),
    "one_sequence.concepts": ("This model's tokens change grid and width at every stage, so one layer's patch tokens "
                              "(what an SAE reads) do not lie on the photo's patch grid.",
                              "这个模型的词元在每个阶段都改变网格和宽度，所以单层的图块词元（SAE 读取的内容）不在照片的"
                              "图块网格上。"),
    "message.saes_listed_only": (
        "This server offers only the SAEs in its list. Other SAE folders open when the app runs on your own machine "
        "(python app.py).",
        "这个服务器只提供其列表中的稀疏自编码器。其他 SAE 文件夹只在你自己的电脑上运行本应用时才能打开"
        "（python app.py）。"),
    "message.sae_failed": ("Could not open this SAE: {error}", "无法打开这个稀疏自编码器：{error}"),
    "message.concepts_latent": ("That is not a latent of this SAE: pick one of the list or type a number from 0 to "
                                "{last}.", "这不是这个稀疏自编码器的潜变量：请从列表中选一个，或输入 0 到 {last} 之间的数。"),
    "message.concepts_factor": ("The factor must be a number from {low:g} to {high:g} (0 switches the latent off).",
                                "倍数必须是 {low:g} 到 {high:g} 之间的数（0 表示关闭这个潜变量）。"),
    "message.concepts_first": ("Pick an SAE first (the box at the top of the Concepts tab).",
                               "请先选一个稀疏自编码器（“概念”页顶部的框）。"),
    # --- the hook points, as the view names them -----------------------------------------------------------------
    "concepts.hook.residual": ("the stream after the block", "该块之后的残差流"),
    "concepts.hook.attention": ("what the attention adds", "注意力的输出"),
    "concepts.hook.mlp": ("what the MLP adds", "MLP 的输出"),
    # --- where an SAE comes from (SaeInfo.source) ------------------------------------------------------------------
    "concepts.source.trained": ("trained with this tool", "用本工具训练"),
    "concepts.source.sae-lens": ("saved by sae-lens", "由 sae-lens 保存"),
    "concepts.source.vit-prisma": ("saved by ViT-Prisma", "由 ViT-Prisma 保存"),
    # --- the view's lines ----------------------------------------------------------------------------------------
    "concepts.change.off": ("{name} switched off", "关闭{name}"),
    "concepts.change.scaled": ("{name} × {factor:g}", "{name} 乘以 {factor:g}"),
    "concepts.line.sae": ("SAE on layer {layer} ({hook}): {latents} latents, {kind}{k}, {source}",
                          "第 {layer} 层（{hook}）上的稀疏自编码器：{latents} 个潜变量，{kind}{k}，{source}"),
    "concepts.line.patch": ("Latents active at patch ({row}, {col}), strongest first", "图块 ({row}, {col}) 上激活的潜变量，"
                                                                                        "按强度排序"),
    "concepts.line.patch_none": ("No latent is active at patch ({row}, {col}).", "图块 ({row}, {col}) 上没有激活的潜变量。"),
    "concepts.line.top5_change": ("Top-5 with {change}: {after} (before: {before}).",
                                  "{change} 后的前五类：{after}（之前：{before}）。"),
    "concepts.line.kl": ("KL divergence from the model's own probabilities: {kl:.3g} nats.",
                         "与原模型概率的 KL 散度：{kl:.3g} 奈特。"),
    # --- messages ------------------------------------------------------------------------------------------------
    "concepts.error.width": ("This SAE reads tokens of width {sae}, but the model's are {model} wide: it was made for "
                             "another model.", "这个稀疏自编码器读取宽度为 {sae} 的词元，但模型的词元宽度是 {model}：它是为"
                             "另一个模型训练的。"),
    "concepts.error.layer": ("This SAE reads layer {layer}, but the model has layers 0 to {last}.",
                             "这个稀疏自编码器读取第 {layer} 层，但模型只有第 0 到 {last} 层。"),
    "concepts.error.weights": ("This SAE was trained on another model's tokens ({trained}); open it with the model it "
                               "was trained on.", "这个稀疏自编码器是在另一个模型（{trained}）的词元上训练的；请配合训练它的"
                               "模型使用。"),
    "concepts.error.latent": ("No latent {latent}: this SAE has latents 0 to {last}.",
                              "没有潜变量 {latent}：这个稀疏自编码器只有潜变量 0 到 {last}。"),
    "concepts.error.factor": ("A latent's factor must be a finite number (0 switches it off) but got {factor}.",
                              "潜变量的倍数必须是有限数（0 表示关闭），但收到了 {factor}。"),
    "concepts.error.extra": ("Training an SAE needs the optional package overcomplete: pip install "
                             "'vit-attention-explorer[concepts]'.", "训练稀疏自编码器需要可选软件包 overcomplete："
                             "pip install 'vit-attention-explorer[concepts]'。"),
}

register(PAGE, PICTURES)
