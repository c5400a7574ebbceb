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
    # --- the hook points, as the view names them -----------------------------------------------------------------
    "concepts.hook.residual": ("the stream after the block", "该块之后的残差流"),
    "concepts.hook.attention": ("what the attention adds", "注意力的输出"),
    "concepts.hook.mlp": ("what the MLP adds", "MLP 的输出"),
    # --- the view's lines ----------------------------------------------------------------------------------------
    "concepts.change.off": ("{name} switched off", "关闭{name}"),
    "concepts.change.scaled": ("{name} × {factor:g}", "{name}乘以 {factor:g}"),
    "concepts.line.sae": ("SAE on layer {layer} ({hook}): {latents} latents, {kind}{k}, from {source}",
                          "第 {layer} 层（{hook}）上的稀疏自编码器：{latents} 个潜变量，{kind}{k}，来源：{source}"),
    "concepts.line.patch": ("Latents active at patch ({row}, {col}), strongest first", "图块 ({row}, {col}) 上激活的潜变量，"
                                                                                        "按强度排序"),
    "concepts.line.patch_none": ("No latent is active at patch ({row}, {col}).", "图块 ({row}, {col}) 上没有激活的潜变量。"),
    "concepts.line.top5_change": ("Top-5 with {change}: {after} (before: {before})", "{change}后的前五类：{after}（之前：{before}）"),
    "concepts.line.kl": ("KL divergence from the model's own probabilities: {kl:.3g} nats",
                         "与原模型概率的 KL 散度：{kl:.3g} 奈特"),
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
