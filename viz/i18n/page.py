"""The page's own texts: title, tab names and descriptions, control labels and their help, picture labels,
messages. key -> (English, Simplified Chinese).

Static texts (no braces) can go straight to ``gr.I18n``; texts with fields (messages, the summary) are filled on
the server with ``viz.i18n.t(key, lang, ...)``. Help texts (``help.*``) are one or two short sentences for a
control's ``info``: what it does and when to use it.

What the loader assumed (``assumption.*``) is said in English by ``vit.checkpoints.assumptions.ASSUMED`` (the sentences
``LoadedModel.assumptions`` holds); the Chinese is beside it here.
"""
from vit.checkpoints.assumptions import ASSUMED
from vit.checkpoints.references import WHY_UNBUILT

HOW_ZH = "（传给 vit.load，或在文件旁的同名 JSON 文件中写 {{{{\"config\": {{{{\"{field}\": {value}}}}}}}}}）"


def _how_zh(field: str, value: str) -> str:
    return HOW_ZH.format(field=field, value=value)


PAGE: dict[str, tuple[str, str]] = {
    # --- header and inputs -------------------------------------------------------------------------------
    "page.title": ("ViT Attention Explorer", "ViT 注意力探索器"),
    "page.intro": (
        "Drop a photo: the Vision Transformer classifies it once, then every tab shows what it looked at. "
        "Sliders and clicks re-render instantly.",
        "放入一张照片：视觉 Transformer 只对它分类一次，之后每个标签页都展示它看了哪里。拖动滑块或点击会立即重绘。"),
    "page.language": ("Language", "语言"),
    "label.photo": ("Photo", "照片"),
    "label.examples": ("Example photos", "示例照片"),
    "label.top5": ("Top-5 classes", "前 5 个类别"),
    "label.summary": ("Summary", "概要"),
    "label.model": ("Model", "模型"),
    "help.model": ("a checkpoint in weights/, or type a path or a Hugging Face Hub name (facebook/dinov2-small) and "
                   "press Enter",
                   "weights/ 里的检查点，或输入一个路径或 Hugging Face Hub 上的模型名（facebook/dinov2-small）后按回车"),
    "button.analyze": ("Analyze", "分析"),
    "control.preprocess": ("Photo → model input", "照片 → 模型输入"),
    "help.preprocess": (
        "own: the checkpoint's own pipeline, as it was trained and evaluated; crop: keep the shape, cut out the "
        "centre; squash: the whole photo, stretched",
        "自带：检查点自己的预处理，与训练和评估时一致；裁剪：保持长宽比，裁出中心；拉伸：整张照片，拉伸到输入大小"),
    "choice.own": ("own", "自带"),
    "choice.crop": ("crop", "裁剪"),
    "choice.squash": ("squash", "拉伸"),
    "summary.line": (
        "**{model}** saw a {width}×{height} {input} as {grid} patches{prefix} = {tokens} tokens, {layers} layers × "
        "{heads} heads{took}.",
        "**{model}** 把 {width}×{height} 的{input}看成 {grid} 个图块{prefix}，共 {tokens} 个词元，"
        "{layers} 层 × {heads} 个头{took}。"),
    "summary.crop": ("crop", "裁剪图像"),
    "summary.squashed": ("squashed photo", "拉伸后的整张照片"),
    "summary.stretched_crop": ("crop of the stretched photo", "拉伸后照片的中心裁剪"),
    "summary.aspect": ("whole photo at its own aspect ratio", "保持原长宽比的整张照片"),
    "summary.prefix": (" + {count} prefix", " + {count} 个前缀词元"),
    "summary.took": (" · forward pass {ms:.0f} ms", " · 前向计算 {ms:.0f} 毫秒"),
    "verified.checked": ("Checked against {library} {version}: Δ {delta}.", "已与 {library} {version} 核对：Δ {delta}。"),
    "verified.unverified": ("Unverified (opened without the check against its library).",
                            "未核对（打开时未与其所属库核对）。"),
    "verified.not_verified": ("Not verified ({reason}).", "未核对（{reason}）。"),
    **{f"verified.reason.{key}": (WHY_UNBUILT[key], zh) for key, zh in {
        "not_installed": "未安装 {library}",
        "own_format": "本工具自己的格式：它就是自己的库",
        "no_library": "这里没有读取 {format} 格式的库",
        "library_failed": "{library} 无法构建这个模型（{error}）",
        "other_tensors": "{library} 的模型不接受文件中的张量（{missing}）",
        "timm_cls_mean": "timm 没有把 CLS 词元与图块均值并列读取的方式",
        "timm_prefix_norm": "timm 没有为 CLS 和寄存器词元单独设置的最终归一化",
        "timm_by_name": "并行块 ViT 和 NaFlex ViT 只有在给出其 timm 架构名时才核对",
        "timm_register_positions": "只要 CLS 词元有位置嵌入，timm 就给寄存器也加上位置嵌入",
        "timm_pool_heads": "timm 的 VisionTransformer 池化的头数与块的头数相同",
        "timm_unknown_tower": "open_clip 的 timm 图像塔所给的架构 timm 不认识",
        "transformers_no_config": "没有所在文件夹 config.json 的 transformers 状态字典没有给出类名",
        "transformers_no_class": "transformers 没有 {name} 这个类",
        "open_clip_image_only": "open_clip 只能从文件夹或两个塔的张量构建 CLIP，而这个文件只有图像塔",
        "torchvision_headless": "torchvision 的 ViT 总带有分类头",
        "resized": "{library} 只在文件自己的输入尺寸上核对，而这次加载要求了别的尺寸",
    }.items()},
    "summary.assumed": ("**Assumed when loading** (not in the checkpoint):", "**加载时的假设**（检查点中没有）："),

    # --- what the loader assumed (vit.LoadedModel.assumptions) ------------------------------------------------
    "assumption.heads_known": (ASSUMED["heads_known"],
        "文件中没有注意力头数：假定为 {heads}，与已发布的、宽度为 {width} 且结构相同的 ViT 一致；若头数是别的数 N，请给出 "
        "num_heads=N" + _how_zh("num_heads", "N") + "。"),
    "assumption.heads_default": (ASSUMED["heads_default"],
        "文件中没有注意力头数：假定为 {heads}（每个头 {head_dim} 维，大多数 ViT 如此）；若头数是别的数 N，请给出 "
        "num_heads=N" + _how_zh("num_heads", "N") + "。"),
    "assumption.act_openai_clip": (ASSUMED["act_openai_clip"],
        "文件中没有 MLP 的激活函数：假定为 QuickGELU，与 OpenAI 的 CLIP 相同；用精确 GELU 训练的 open_clip 模型（大多数 "
        "LAION 和 DataComp 模型）需要 mlp_act=\"gelu\"" + _how_zh("mlp_act", '"gelu"') + "。"),
    "assumption.act_clip": (ASSUMED["act_clip"],
        "文件中没有 MLP 的激活函数：假定为精确 GELU，与 timm 的 CLIP 图像塔相同；timm 的 *_clip_quickgelu_* 模型需要 "
        "mlp_act=\"quick_gelu\"" + _how_zh("mlp_act", '"quick_gelu"') + "。"),
    "assumption.act_siglip": (ASSUMED["act_siglip"],
        "文件中没有 MLP 的激活函数：假定为精确 GELU，与 timm 的 SigLIP 图像塔相同；使用 tanh 近似 GELU 的 SigLIP 2 "
        "图像塔需要 mlp_act=\"gelu_tanh\"" + _how_zh("mlp_act", '"gelu_tanh"') + "。"),
    "assumption.rope_grid": (ASSUMED["rope_grid"],
        "文件中没有旋转位置编码：假定为 EVA-02 的，其角度按 timm 的 EVA-02 模型训练时的 {grid} 网格缩放。"),
    "assumption.timm_table": (ASSUMED["timm_table"],
        "没有安装 timm：timm 的 {name} 是什么（它的头数、归一化、旋转和读出方式）取自本工具自己的 timm 架构表，而不是 timm；"
        "安装 timm（pip install timm）后会从 timm 本身读取，并把加载结果与 timm 的模型核对。"),
    "assumption.sam_eps": (ASSUMED["sam_eps"],
        "文件中没有各块 LayerNorm 的 eps：假定为 {eps}，与 {source} 相同；别的 eps E 需要 layer_norm_eps=E"
        + _how_zh("layer_norm_eps", "E") + "。"),
    "assumption.readout_timm": (ASSUMED["readout_timm"],
        "文件中没有分类头读取哪些词元：假定为 readout \"{readout}\"，即 timm 中 {family} 模型的默认设置"
        "（global_pool='{pool}'）；以别的读取方式训练的模型（例如 {family} 自己的 CLS 特征）需要 readout=\"cls\""
        + _how_zh("readout", '"cls"') + "。"),
    "assumption.rotary_family": (ASSUMED["rotary_family"],
        "文件中没有旋转位置编码：假定为 {family} 的，因为它的张量就是 {family} 的；若它是别的模型，请在文件旁的同名 JSON "
        "文件中用 \"architecture\" 给出它在 timm 中的名字。"),
    "assumption.img_size": (ASSUMED["img_size"],
        "文件中没有输入尺寸：根据它的 {count} 个位置嵌入，按 {grid} 的方形网格假定为 {size}；若它是在别的网格上训练的，"
        "请给出 img_size=[H, W]" + _how_zh("img_size", "[H, W]") + "。"),
    "assumption.swin_img_size": (ASSUMED["swin_img_size"],
        "文件中没有输入尺寸：假定为 {size}，此时最后一个阶段恰好是一个 {window}×{window} 的窗口；若它是在别的尺寸上训练的，"
        "请给出 img_size=[H, W]" + _how_zh("img_size", "[H, W]") + "。"),
    "assumption.preprocess": (ASSUMED["preprocess"],
        "文件中没有预处理设置：假定为 {source} 对 {family} 的惯例（缩放 {resize}，裁剪 {crop}，{interpolation} 插值，"
        "均值 {mean}，标准差 {std}）；请在文件旁的同名 JSON 文件中用 \"preprocess\" 给出它自己的设置。"),
    "assumption.processor": (ASSUMED["processor"],
        "文件夹中没有 preprocessor_config.json：假定为 {processor} 的默认设置（缩放 {resize}，裁剪 {crop}，"
        "{interpolation} 插值，均值 {mean}，标准差 {std}）。"),
    "assumption.labels": (ASSUMED["labels"],
        "文件中没有类别名称：为它的 1000 个输出假定为 ImageNet-1k 的类别；若它预测的是别的类别，请在文件旁的同名 JSON 文件"
        "中写上 \"labels\"。"),
    "assumption.heads_parallel": (ASSUMED["heads_parallel"],
        "文件中没有注意力头数：假定为 {branches} 个分支、每个分支 {heads} 个头，与已发布的、宽度为 {width} 的 ViT 一致；"
        "若各分支合计有 N 个头，请给出 num_heads=N" + _how_zh("num_heads", "N") + "。"),
    "assumption.block_order": (ASSUMED["block_order"],
        "文件中没有 LayerNorm 的位置：假定在每个分支之后（timm 的 *_rpn 块），因为这些块没有 LayerScale，而 timm 的前置"
        "归一化相对位置块都有；没有 LayerScale 训练的前置归一化模型需要 res_post_norm=false"
        + _how_zh("res_post_norm", "false") + "。"),
    "assumption.block_order_rpn": (ASSUMED["block_order_rpn"],
        "文件中没有 LayerNorm 的位置：假定在每个分支之后（timm 的 vit_base_patch16_rpn_224），它是 timm 中唯一有这些张量的 ViT"
        "（没有 CLS 词元，池化之后有 LayerNorm，没有 LayerScale）；有这些张量的前置归一化模型需要 res_post_norm=false"
        + _how_zh("res_post_norm", "false") + "。"),
    "assumption.eps_beit3": (ASSUMED["eps_beit3"],
        "文件中没有 LayerNorm 的 eps：假定为 1e-5，与 timm 的 BEiT-3 模型（beit3_*）相同，这些张量正是它们的（注意力和 MLP "
        "内有 LayerNorm，有 CLS 词元，池化之后有 LayerNorm）；别的 eps E 需要 layer_norm_eps=E"
        + _how_zh("layer_norm_eps", "E") + "。"),
    "assumption.img_size_relpos": (ASSUMED["img_size_relpos"],
        "文件中没有输入尺寸：假定为 {size}，与 timm 中宽度为 {width}、图块为 {patch} 像素的相对位置 ViT 的配置一致"
        "（偏置可以为任意网格算出）；若要别的尺寸，请给出 img_size=[H, W]" + _how_zh("img_size", "[H, W]") + "。"),
    "assumption.img_size_naflex": (ASSUMED["img_size_naflex"],
        "文件中没有输入尺寸：假定为 {size}，即 timm 的 NaFlexViT 模型配置的输入（每张照片保持原长宽比，最多 {patches} "
        "个图块）；若要别的图块预算，请给出 img_size=[H, W]" + _how_zh("img_size", "[H, W]") + "。"),
    "assumption.img_size_table": (ASSUMED["img_size_table"],
        "文件中没有输入尺寸：假定为 {size}，即它的位置表的 {grid} 网格（每张照片保持原长宽比，最多 {patches} 个图块）；"
        "若要别的图块预算，请给出 img_size=[H, W]" + _how_zh("img_size", "[H, W]") + "。"),
    "assumption.act_naflex": (ASSUMED["act_naflex"],
        "文件中没有 MLP 的激活函数：假定为 tanh 近似 GELU，与 SigLIP 2 的 NaFlex 图像塔相同（timm 的 naflexvit_*_siglip，"
        "transformers 的 Siglip2VisionModel）；用精确 GELU 训练的模型需要 mlp_act=\"gelu\"" + _how_zh("mlp_act", '"gelu"')
        + "。"),
    "assumption.naflex_resize": (ASSUMED["naflex_resize"],
        "文件中没有位置表缩放到照片网格的方式：假定为 {interp}{aspect}，与具有同样寄存器、LayerScale 和池化方式的 timm "
        "NaFlexViT 模型相同；若是别的方式，请把 pos_embed_interp（\"bicubic\" 或 \"bilinear\"）和 "
        "pos_embed_ar_preserving（true 或 false）传给 vit.load，或写在同名 JSON 文件的 \"config\" 中。"),

    # --- tabs -----------------------------------------------------------------------------------------------
    "tab.rollout": ("Rollout", "注意力展开"),
    "tab.attention": ("Attention", "注意力"),
    "tab.heads": ("All heads", "所有头"),
    "tab.query": ("Patch query", "图块查询"),
    "tab.position": ("Position embeddings", "位置嵌入"),
    "tab.distance": ("Attention distance", "注意力距离"),
    "tab.norms": ("Token norms", "词元范数"),
    "tab.model": ("Model", "模型"),

    # --- tab descriptions -----------------------------------------------------------------------------------
    "about.rollout": (
        "Attention rollout (Abnar & Zuidema 2020) follows the CLS token's attention through every layer, with "
        "the residual connection mixed in: which patches flowed into the CLS token that classified the photo.\n\n"
        "**Rollout is the same for every class**: it shows where the model looked, not why it chose a class. For "
        "that, open **Explain**. A model without a CLS token (an average-pooled ViT, SigLIP's probe, a Swin) is read "
        "through what it pools instead: the note under the map says which.",
        "注意力展开（Abnar & Zuidema 2020）沿着每一层追踪 CLS 词元的注意力，并计入残差连接：显示哪些图块流入了给照片分类的 CLS 词元。"
        "\n\n**注意力展开对所有类别都一样**：它显示模型看了哪里，而不是它为什么选了某个类别。想看原因，请打开“**解释**”页。没有 CLS 词元的模型（平均池化的 ViT、SigLIP 的探针、Swin）改为读取它池化的内容：图下的说明会写明是哪一种。"),
    "about.attention": (
        "Where the CLS token attends in one layer: one head, or the mean of the heads.",
        "CLS 词元在某一层里关注哪里：一个头，或各头的平均。"),
    "about.heads": (
        "The CLS attention of every layer and head, as thumbnails over the photo (the longer of layers and heads runs "
        "across; on a phone, a few layers to a row). Each layer has its own colour scale, its brightest value written "
        "under its number, so that the early, almost uniform layers show their structure too. Click a thumbnail to "
        "select that layer and head. A model without a CLS token shows what it pools instead (a Swin: one grid per "
        "stage, on one scale per stage); the note under the grid says which.",
        "每一层、每个头的 CLS 注意力，以缩略图叠在照片上（层和头中数量较多的一个横向排列；手机上每行只放几层）。每一层各用自己的色标，"
        "最亮的值写在层号下方，这样前面几乎均匀的层也能看出结构。点击缩略图即可选中对应的层和头。没有 CLS 词元的模型改为显示它池化的内容（Swin：每个阶段一张网格，每个阶段一个色标）；网格下的说明会写明是哪一种。"),
    "about.query": (
        "Click a patch of the photo: where it attends (its attention row) and which patches attend to it (its "
        "column), in the layer and head picked in the Attention tab.",
        "点击照片上的一个图块：看它关注哪里（注意力矩阵的行）和哪些图块关注它（列），层和头在“注意力”页选择。"),
    "about.position": (
        "Cosine similarity of each patch's learnt position embedding with all others (ViT paper, Figure 7 "
        "centre): nearby patches, rows and columns are alike.",
        "每个图块学到的位置嵌入与其他所有图块的余弦相似度（ViT 论文图 7 中）：相邻的图块、同一行和同一列的图块彼此相似。"),
    "about.distance": (
        "Mean distance in pixels over which each head attends, by depth (Figure 7 right): early layers mix local "
        "and global heads, late layers attend globally.",
        "每个头关注的平均距离（像素），按深度排列（图 7 右）：浅层既有局部的头也有全局的头，深层都关注全局。"),
    "about.norms": (
        "The length of every token after each layer. A few background patches grow very long and soak up "
        "attention (Darcet et al. 2023); they are outlined in cyan.",
        "每一层之后每个词元的长度。少数背景图块会变得很长并吸走注意力（Darcet 等 2023）；它们用青色框出。"),
    "about.filters": (
        "Principal components of the patch-embedding filters (Figure 7 left): what the first layer looks for in "
        "each patch.",
        "图块嵌入滤波器的主成分（图 7 左）：第一层在每个图块里寻找什么。"),

    # --- controls: labels and help ----------------------------------------------------------------------------
    "control.fusion": ("Head fusion", "多头融合方式"),
    "help.fusion": (
        "how each layer's heads are combined into one matrix before rollout: their mean, maximum or minimum",
        "做注意力展开之前，每一层的多个头如何合成一个矩阵：取平均、最大值或最小值"),
    "choice.mean": ("mean", "平均"),
    "choice.max": ("max", "最大值"),
    "choice.min": ("min", "最小值"),
    "control.discard": ("Discard ratio", "丢弃比例"),
    "help.discard": (
        "lowest share of each layer's attention set to 0 before rollout; higher values keep only the strongest "
        "paths",
        "注意力展开前把每层注意力中最小的这一部分设为 0；数值越大，只保留越强的路径"),
    "control.start_layer": ("Start layer", "起始层"),
    "help.start_layer": (
        "the first layer of the rollout; the layers before it are left out",
        "注意力展开从这一层开始，之前的层不计入"),
    "control.opacity": ("Opacity", "不透明度"),
    "help.opacity": ("how strongly the map covers the photo: 0 shows only the photo, 1 only the map",
                     "热力图盖住照片的程度：0 只显示照片，1 只显示热力图"),
    "control.mask_artifacts": ("Mask high-norm artifact tokens", "屏蔽高范数伪影词元"),
    "help.mask_artifacts": (
        "leave out the few tokens with very large norms (see Token norms) that soak up attention without "
        "showing the object",
        "去掉少数范数特别大、吸走注意力却不对应物体的词元（见“词元范数”页）"),
    "control.layer": ("Layer", "层"),
    "help.layer": ("which encoder layer to show, counted from 0", "显示哪一个编码器层，从 0 开始数"),
    "control.head": ("Head", "头"),
    "help.head": ("which attention head of the layer; untick Mean of heads to use it",
                  "该层的哪一个注意力头；取消“各头平均”后才生效"),
    "control.mean_heads": ("Mean of heads", "各头平均"),
    "note.head_rests": ("The Head slider rests while “Mean of heads” is ticked: untick it to pick one head.",
                        "勾选“各头平均”时，“头”滑块不可用：取消勾选即可选择单个头。"),
    "help.mean_heads": ("show the mean of all heads of the layer instead of one head",
                        "显示该层所有头的平均，而不是单个头"),
    "control.dino_mask": ("Outline the patches holding 60% of the attention (DINO)",
                          "框出占 60% 注意力的图块（DINO）"),
    "help.dino_mask": (
        "DINO's threshold mask: the fewest patches whose attention adds up to 60% of the map",
        "DINO 的阈值掩码：注意力加起来达到 60% 所需的最少图块"),
    "control.rolled": ("Through all layers (rollout) instead of one layer", "贯穿所有层（注意力展开），而不是单独一层"),
    "help.rolled": (
        "show the patch's row and column of the rollout matrix instead of one layer's attention",
        "显示注意力展开矩阵中该图块的行和列，而不是某一层的注意力"),
    "help.photo": ("upload, paste or take a photo; the model sees its centre crop",
                   "上传、粘贴或拍一张照片；模型看到的是它的中心裁剪"),
    "help.heads_click": ("click a thumbnail to open that layer and head", "点击缩略图，打开对应的层和头"),
    "help.query_click": ("click a patch to query it", "点击一个图块来查询它"),

    # --- pictures on the page -----------------------------------------------------------------------------
    "picture.rollout": ("Attention rollout", "注意力展开"),
    "picture.attention": ("Attention of one layer and head", "某一层、某个头的注意力"),
    "picture.heads": ("Layers × heads", "层 × 头"),
    "picture.query_photo": ("Click a patch", "点击一个图块"),
    "picture.query_out": ("Where this patch attends", "这个图块关注哪里"),
    "picture.query_in": ("Which patches attend to it", "哪些图块关注它"),
    "picture.position": ("Position embedding similarity", "位置嵌入相似度"),
    "picture.distance": ("Mean attention distance", "平均注意力距离"),
    "picture.norms": ("Patch token norms per layer", "每层图块词元的范数"),
    "picture.norm_curves": ("Token norms by depth", "词元范数随深度的变化"),
    "picture.architecture": ("Architecture", "模型结构"),
    "picture.filters": ("Embedding filters", "嵌入滤波器"),

    # --- messages -------------------------------------------------------------------------------------------
    "message.models_listed_only": (
        "This server only runs the models in its Model list. Typed paths and other model names load when the "
        "app runs on your own machine (python app.py).",
        "这个服务器只运行模型列表里的模型。输入路径或其他模型名，只在你自己的电脑上运行本应用时有效（python app.py）。"),
    "message.model_failed": ("Could not load the model {model!r}. {error}", "无法加载模型 {model!r}。{error}"),
    # what the server refuses at the door (vit_explorer.door, vit_explorer.heavy): one message whatever was sent
    "message.photo_not_uploaded": (
        "Only photos uploaded to this page can be analysed. Upload the photo (or paste it, or pick an example).",
        "只能分析上传到本页面的照片。请上传这张照片（或粘贴它，或选一张示例照片）。"),
    "message.photo_too_large": ("The photo is too large: {size:.1f} MB, the limit is {limit:.0f} MB.",
                                "照片太大：{size:.1f} MB，上限是 {limit:.0f} MB。"),
    "message.not_a_number": ("A number sent by the page is not a number (NaN or infinite). Reload the page.",
                             "页面发送的某个数值不是有效数字（非数字或无穷大）。请重新加载页面。"),
    "message.bad_request": (
        "The server could not handle this request: the page sent something it does not understand. Reload the "
        "page and try again.",
        "服务器无法处理这个请求：页面发送了它无法理解的内容。请重新加载页面后再试。"),
    "message.heavy_one_at_a_time": (
        "You already have a long job waiting or running (a trust check, a look inside, a comparison or an "
        "animation). Wait for it to finish, then start the next one.",
        "你已有一个较长的任务在排队或运行（可信度检验、查看模型内部、比较或动画）。请等它完成后再开始下一个。"),
    "message.heavy_queue_full": (
        "The server is busy with other visitors' long jobs. Try again in a minute.",
        "服务器正忙于其他访客的较长任务。请一分钟后再试。"),
    "message.preprocess_unknown": ("Unknown preprocessing {choice!r}: expected one of {choices}.",
                                   "未知的预处理方式 {choice!r}：应为 {choices} 之一。"),
    "message.no_analysis": (
        "Give a photo first: upload one, paste one or pick an example photo (the server may have forgotten one "
        "analysed long ago).",
        "请先给一张照片：上传、粘贴，或选一张示例照片（很久以前分析过的照片，服务器可能已经忘了）。"),
    "message.unknown_method": ("Unknown method {method!r}! Expected one of: {methods}.",
                               "未知的方法 {method!r}：应为 {methods} 之一。"),
    "message.analyse_again": ("This photo could not be analysed again ({error}). Upload it again.",
                              "这张照片无法重新分析（{error}）。请重新上传。"),
    "message.running": ("The explorer is running: open {url} in a browser (Ctrl+C stops it).",
                        "探索器已启动：在浏览器中打开 {url}（按 Ctrl+C 停止）。"),
    "message.shared": ("Temporary public link (it lasts up to a week): {url}", "临时公开链接（最多保留一周）：{url}"),
    "message.share_hint": ("To share it through a temporary public link, start it with: {command} --share",
                           "想通过临时公开链接分享，请这样启动：{command} --share"),
    "message.cannot_start": ("Cannot start: the model {model!r} did not load.", "无法启动：模型 {model!r} 没有加载成功。"),
    "message.start_with": (
        "Start with a checkpoint that is on this machine, for example:", "请用这台电脑上已有的检查点启动，例如："),
    "message.no_checkpoint_here": (
        "No checkpoint was found on this machine. Download one (e.g. {url}), save it in {folder}, and start "
        "again; or start with any checkpoint file: python app.py --weights PATH",
        "这台电脑上没有找到检查点。请下载一个（例如 {url}），保存到 {folder}，再启动；"
        "或者用任意检查点文件启动：python app.py --weights 路径"),

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
    # --- the tabs of issues 13, 15, 17 and 18: display options, Learn, Explain, Compare, CLIP texts -----------
    "label.display": ("How maps are drawn", "热力图的画法"),
    "control.shared_scale": ("One colour scale for all layers", "所有层共用一个色标"),
    "help.shared_scale": (
        "colour every layer on the same scale (its minimum and maximum over all layers), so layers compare colour "
        "for colour; unticked, each map (and each layer of All heads) has its own scale",
        "每一层都用同一个色标（所有层的最小值和最大值），这样各层可以按颜色直接比较；不勾选时，每张图（以及“所有头”里的每一层）"
        "各用自己的色标"),
    "control.patch_true": ("Patch-true (no smoothing)", "按图块显示（不平滑）"),
    "help.patch_true": ("one colour per patch with thin grid lines: the map as the model has it, not smoothed",
                        "每个图块一种颜色并画出细网格线：模型里真实的热力图，不做平滑"),
    "picture.crop": ("What the model saw (outlined)", "模型看到的区域（框内）"),
    "tab.learn": ("Learn", "学习"),
    "tab.explain": ("Explain", "解释"),
    "tab.compare": ("Compare", "比较"),
    "about.learn": (
        "The ViT paper step by step on your photo: every shape is the shape of a real tensor of this model. Step "
        "through with Back and Next; the layer slider picks the layer of step 7.",
        "在你的照片上一步一步走完 ViT 论文：每个形状都是这个模型里真实张量的形状。用“上一步”“下一步”浏览；"
        "层滑块选择第 7 步显示哪一层。"),
    "control.step": ("Step", "步骤"),
    "help.step": ("which step of the forward pass to show", "显示前向计算的哪一步"),
    "button.back": ("Back", "上一步"),
    "button.next": ("Next", "下一步"),
    "label.walk_table": ("Every step with its real shape", "每一步及其真实形状"),
    "walk.table_header": ("| step | shape |\n|---|---|", "| 步骤 | 形状 |\n|---|---|"),
    "picture.step": ("This step on your photo", "这一步在你的照片上"),
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
    "readout.cls": ("the CLS token", "CLS 词元"),
    "readout.map": ("the MAP probe's attention over the patch tokens", "MAP 探针对图块词元的注意力"),
    "readout.map_all": ("the MAP probe's attention over all tokens", "MAP 探针对所有词元的注意力"),
    "readout.mean": ("the mean of the patch tokens", "图块词元的均值"),
    "readout.mean_all": ("the mean of all tokens (prefix tokens included)", "所有词元（含前置词元）的均值"),
    "readout.cls_mean": ("the CLS token and the mean of the patch tokens side by side", "CLS 词元与图块词元的均值并列"),
    "readout.distilled": ("the mean of the CLS token's and the distillation token's heads", "CLS 词元与蒸馏词元两个头的平均"),
    "explain.contrast": (" Contrast: minus **{other}**.", " 对比：减去 **{other}**。"),
    "message.target_failed": ("Nothing to explain for that target: {error}", "无法解释这个目标：{error}"),
    "message.explain_failed": ("This model cannot be explained this way: {error}", "这个模型不能用这种方式解释：{error}"),
    "control.texts": ("Texts (CLIP zero-shot)", "文本（CLIP 零样本）"),
    "help.texts": ("class names or prompts, one per line or separated by commas, e.g. a photo of a cat",
                   "类别名或提示语（用英文写），每行一个或用逗号分开"),
    "button.zero_shot": ("Score the texts", "计算文本的概率"),
    "label.zero_shot": ("Zero-shot probabilities", "零样本概率"),
    "control.explain_text": ("Explain this text instead of a class", "解释这段文本而不是类别"),
    "help.explain_text": ("a CLIP checkpoint's image–text score is the target", "目标是 CLIP 检查点的图文相似度得分"),
    "message.no_classes": (
        "This model has no classifier head (a backbone such as DINOv3: its output is features, not classes), so it has "
        "no class to explain, check or look inside for; with a CLIP checkpoint, tick typed texts instead.",
        "这个模型没有分类头（例如 DINOv3 这样的骨干网络：它输出的是特征，不是类别），因此没有可以解释、检验或深入查看的"
        "类别；如果是 CLIP 检查点，可以改为勾选输入的文本。"),
    "message.no_text_tower": ("This checkpoint has no text tower, so typed texts cannot be scored.",
                              "这个检查点没有文本塔，无法计算输入文本的概率。"),
    "about.compare": (
        "Two checkpoints on the same photo: both top-5 with the change in probability, rollout and attention of A, "
        "B and their difference, and the mean attention distance of both.",
        "两个检查点看同一张照片：两者的前 5 个类别及概率变化，A、B 的注意力展开和注意力以及它们的差，还有两者的平均注意力距离。"),
    "control.compare_model": ("Second checkpoint (B)", "第二个检查点（B）"),
    "help.compare_model": ("another checkpoint (those on this machine are listed), or this model again with another "
                           "way of making its input; or type a path and press Enter",
                           "另一个检查点（列出了这台电脑上已有的），或者同一个模型换一种输入方式；也可以输入一个路径后按回车"),
    "control.preprocess_b": ("B: photo → model input", "B：照片 → 模型输入"),
    "help.preprocess_b": ("how B's input is made: as A's, or the checkpoint's own pipeline, a crop or the squashed photo",
                          "B 的输入怎样生成：与 A 相同，或用检查点自带的预处理、裁剪、拉伸整张照片"),
    "choice.as_a": ("as A", "与 A 相同"),
    "message.compare_choose": (
        "Choose a second checkpoint (B) to compare with this one, for example one on this machine:\n{options}\n\n"
        "Or keep this model as B and pick another way of making its input (B: photo → model input).",
        "请先选择用来比较的第二个检查点（B），例如这台电脑上已有的：\n{options}\n\n"
        "也可以让 B 仍是这个模型，但换一种输入方式（“B：照片 → 模型输入”）。"),
    "button.compare": ("Compare", "比较"),
    "picture.comparison": ("A against B", "A 与 B 对比"),
    "label.top5_a": ("Top-5 of A", "A 的前 5 个类别"),
    "label.top5_b": ("Top-5 of B", "B 的前 5 个类别"),
    "control.animate_what": ("Animate through depth", "随深度变化的动画"),
    "choice.attention": ("CLS attention", "CLS 注意力"),
    "choice.rollout": ("rollout", "注意力展开"),
    "help.animate_what": ("which map each frame shows: the CLS attention of that layer, or the rollout up to it",
                          "每一帧显示什么：该层的 CLS 注意力，或到该层为止的注意力展开"),
    "button.animate": ("Make the animation (GIF)", "生成动画（动图）"),
    "label.animation": ("Attention through depth, one frame per layer", "注意力随深度变化，每层一帧"),
    "control.snapshots": ("Training snapshots folder", "训练快照文件夹"),
    "help.snapshots": ("a folder written by python -m vit.train --snapshot-every N (local app only)",
                       "训练时定期保存的快照所在的文件夹（仅限本机运行的应用）"),
    "button.load_snapshots": ("Load the snapshots", "加载快照"),
    "control.snapshot": ("Snapshot", "快照"),
    "help.snapshot": ("scrub through the training run, one snapshot at a time (it wakes up once a snapshot folder is "
                      "loaded above)",
                      "逐个快照浏览训练过程（在上方加载快照文件夹之后才能拖动）"),
    "picture.snapshot": ("The model learning to see", "模型学会看的过程"),
    "message.compare_failed": ("Could not compare: {error}", "无法比较：{error}"),
    "message.snapshots_failed": ("Could not open the snapshots: {error}", "无法打开快照：{error}"),
    "message.snapshots_first": ("Open the snapshots first (type the folder and press Enter).",
                                "请先打开快照（输入文件夹路径后按回车）。"),
    "message.bad_photo": ("{error}", "这张照片无法读取：{error}"),
    "label.heads_info": ("Selected head", "选中的头"),
    "help.heads_info": ("Click a thumbnail: its layer, head, mean attention distance and entropy appear here, and "
                        "the Attention tab shows it.",
                        "点击一个缩略图：这里显示它的层、头、平均注意力距离和熵，“注意力”页也会显示它。"),
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

    # --- notes under the maps (page text, written on the server in the visitor's language) -----------------
    "note.artifacts_dominate": (
        "{share:.0%} of this map lies on {count} high-norm artifact tokens, not on the object: see Token norms, "
        "or mask them.",
        "此图 {share:.0%} 的注意力落在 {count} 个高范数伪影词元上，而不在物体上：见“词元范数”页，或将它们屏蔽。"),
    "note.artifacts_masked": (
        "{count} high-norm artifact tokens are masked: their attention is left out and the rest renormalised "
        "(untick “Mask high-norm artifact tokens” under How maps are drawn to see them; Token norms shows them).",
        "已屏蔽 {count} 个高范数伪影词元：去掉它们的注意力后，其余部分重新归一化（在“热力图的画法”里取消勾选“屏蔽高范数伪影词元”"
        "即可看到它们；“词元范数”页显示了它们）。"),
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
    "note.stretched": (
        "The model sees the whole photo, stretched to its {crop} input: its aspect ratio is not kept, nothing is "
        "cut away.",
        "模型看到的是整张照片，被拉伸成 {crop} 的输入：不保持长宽比，没有裁掉任何部分。"),
    "note.whole": (
        "The model sees the whole photo, resized to its {crop} input: nothing is cut away.",
        "模型看到的是整张照片，缩放成 {crop} 的输入：没有裁掉任何部分。"),
    "note.aspect": (
        "The model sees the whole photo at its own aspect ratio, resized to {crop} ({grid} patches, at most {most}): "
        "nothing is cut away, and its maps have the photo's shape.",
        "模型看到的是保持原长宽比的整张照片，缩放成 {crop}（{grid} 个图块，最多 {most} 个）：没有裁掉任何部分，"
        "各幅图也保持照片的形状。"),
    "note.stretched_crop": (
        "The photo is stretched to {resize} (its aspect ratio is not kept), then the outlined {crop} centre is cut "
        "out; everything outside it is cut away.",
        "照片先被拉伸成 {resize}（不保持长宽比），再裁出框内 {crop} 的中心区域，框外的部分都被裁掉了。"),
    "note.heads_scale": (
        "One colour scale for every thumbnail, in multiples of uniform attention (1 = 1/{tokens}).",
        "所有缩略图共用一个色标，单位是均匀注意力的倍数（1 = 1/{tokens}）。"),
    "note.heads_layer_scale": (
        "Each layer on its own colour scale, from 0 to its brightest thumbnail, whose value in multiples of uniform "
        "attention (1 = 1/{tokens}) is written under the layer's number: early layers attend almost uniformly and "
        "late ones tens of times more sharply. Tick “One colour scale for all layers” to compare layers colour for "
        "colour.",
        "每一层使用自己的色标，从 0 到该层最亮的缩略图；这个最大值（单位：均匀注意力的倍数，1 = 1/{tokens}）写在层号下方："
        "浅层的注意力几乎是均匀的，深层则集中数十倍。勾选“所有层共用一个色标”即可按颜色直接比较各层。"),
    "note.head_info": (
        "layer {layer}, head {head}: mean attention distance {distance:.0f} pixels, entropy {entropy:.2f} bits "
        "({share:.0%} of the maximum {maximum:.2f})",
        "第 {layer} 层，头 {head}：平均注意力距离 {distance:.0f} 像素，熵 {entropy:.2f} 比特"
        "（最大值 {maximum:.2f} 的 {share:.0%}）"),
    # --- the input size (vit_explorer.views: size_control, size_cost, switch_size) ------------------------------
    "control.input_size": ("Input size (pixels per side)", "输入尺寸（每边像素）"),
    "help.input_size": (
        "the model's own size, or larger up to this server's token budget: more patches, finer maps (the position "
        "embeddings are resampled to the grid); the cost is said before it runs",
        "模型自己的尺寸，或更大，直到本服务器的词元上限：图块更多，图更精细（位置嵌入按网格重采样）；运行前先说明代价"),
    "note.input_cost": ("{side}×{side}: {tokens:,} tokens (this server allows {budget:,}); the server keeps {mb:.1f} MB "
                        "for it.",
                        "{side}×{side}：{tokens:,} 个词元（本服务器上限 {budget:,}）；服务器为它保留 {mb:.1f} 兆字节。"),
    "note.input_cost_timed": ("{side}×{side}: {tokens:,} tokens (this server allows {budget:,}), about {seconds:.1f} s "
                              "to analyse, {mb:.1f} MB kept for it.",
                              "{side}×{side}：{tokens:,} 个词元（本服务器上限 {budget:,}），分析约需 {seconds:.1f} 秒，"
                              "保留 {mb:.1f} 兆字节。"),
    "note.input_size_fixed": ("This model's relative position bias was learnt for its own {side}×{side} input: it runs "
                              "at that size only.",
                              "这个模型的相对位置偏置是为它自己 {side}×{side} 的输入学到的：只能以这个尺寸运行。"),
    "message.input_size_fixed": ("This model runs at its own {side}×{side} input only: its relative position bias "
                                 "cannot follow another grid.",
                                 "这个模型只能以它自己 {side}×{side} 的输入运行：它的相对位置偏置无法用于别的网格。"),
    "message.input_size_refused": (
        "Cannot analyse at {side}×{side}: expected a multiple of the patch size {patch} with at most {budget:,} "
        "tokens on this server (up to {largest}×{largest}).",
        "无法以 {side}×{side} 分析：需要是图块大小 {patch} 的倍数，且本服务器最多 {budget:,} 个词元（最大 "
        "{largest}×{largest}）。"),
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
    "message.no_cjk_font": (
        "Pictures are drawn with English labels: this machine has no Chinese font. Install {font} "
        "(Debian/Ubuntu: `{command}`) and restart the app.",
        "图中文字暂以英文显示：本机没有中文字体。请安装 {font}（Debian/Ubuntu：`{command}`），然后重启应用。"),
    # a Swin on the page (viz.window_views, vit_explorer's tabs)
    "swin.summary": ("**{model}** (a Swin) saw a {width}×{height} {input} as stages of {stages} tokens, attending "
                     "inside windows of {window} tokens, {layers} layers{took}.",
                     "**{model}**（一个 Swin）看到 {width}×{height} 的{input}，各阶段分别为 {stages} 个词元，在 {window} 个"
                     "词元的窗口内做注意力，共 {layers} 层{took}。"),
    "swin.note.rollout": ("A Swin's rollout runs through every layer's windows and every patch merging, and is read "
                          "by the average pool (docs/swin.md): the discard ratio, the first layer and artifact masking "
                          "are a ViT's options and do not change it.",
                          "Swin 的注意力展开穿过每一层的窗口和每一次图层合并，由平均池化读出（见 docs/swin.md）：丢弃比例、"
                          "起始层和伪影遮蔽是 ViT 的选项，不改变它。"),
    "swin.note.layer": ("Stage {stage}: a {grid} grid of tokens of {pixels}×{pixels} pixels, windows of {window} "
                        "tokens (outlined), shifted by {shift}.",
                        "第 {stage} 阶段：{grid} 的词元网格，每个词元 {pixels}×{pixels} 像素，窗口 {window} 个词元"
                        "（白线框出），平移 {shift}。"),
    "swin.note.heads": ("Every head of every layer, one grid per stage, each stage on its own colour scale (its range "
                        "in the grid's title): the average pool's view of each head, on the stage's own grid. Click a "
                        "thumbnail to select that layer and head.",
                        "每一层的每个头，每个阶段一张网格，每个阶段各用自己的色标（范围见网格标题）：平均池化在每个头上的"
                        "注意力，画在该阶段自己的网格上。点击缩略图即可选中该层和该头。"),
    "swin.head_info": (
        "{where}: mean attention distance {distance:.0f} pixels, entropy of the average pool's attention "
        "{entropy:.2f} bits ({share:.0%} of the maximum {maximum:.2f})",
        "{where}：平均注意力距离 {distance:.0f} 像素，平均池化注意力的熵 {entropy:.2f} 比特"
        "（最大值 {maximum:.2f} 的 {share:.0%}）"),
    "swin.note.query": ("Patch ({row}, {col}) lies in token ({token_row}, {token_col}) of stage {stage}'s {grid} grid: "
                        "its row and its column inside its window, the layer's windows outlined.",
                        "图层 ({row}, {col}) 位于第 {stage} 阶段 {grid} 网格的词元 ({token_row}, {token_col})："
                        "它在自己窗口内的行与列，白线框出该层的窗口。"),
    "swin.note.no_rolled": ("A rolled-out row of one patch has no Swin form (merging joins 2×2 tokens): this is the "
                            "chosen layer's.",
                            "单个图层的展开行在 Swin 中没有定义（合并把 2×2 个词元并成一个）：这里显示所选层的。"),
    "swin.not.features": ("A Swin's tokens change grid and width at every stage, so the dense features of one layer "
                          "on the photo's patch grid (this tab) are not defined for it.",
                          "Swin 的词元在每个阶段都改变网格和宽度，所以本页在图层网格上的单层稠密特征对它没有定义。"),
    "swin.not.inside": ("The logit lens, direct logit attribution, head importance and patching read a ViT's one "
                        "residual stream; a Swin's stages change width and it has no CLS token.",
                        "logit 透镜、直接 logit 归因、头重要性和修补读取的是 ViT 的单一残差流；Swin 的各阶段宽度不同，"
                        "也没有 CLS 词元。"),
    "swin.not.animate": ("The animation steps through a ViT's layers on one grid; a Swin's grid halves at every "
                         "stage, so the All heads tab shows its layers instead.",
                         "动画在同一网格上逐层播放 ViT 的各层；Swin 的网格每个阶段减半，所以请在“所有头”页查看它的各层。"),
    "swin.not.position": ("A Swin has no table of positions to compare: its only position information is the bias "
                          "between two tokens of one window.",
                          "Swin 没有可比较的位置表：它仅有的位置信息是同一窗口内两个词元之间的偏置。"),
    "swin.learn": ("A Swin's walk is its stages: the photo cut into patches, layers that attend inside windows (every "
                   "other one shifted by half a window), 2×2 merging between stages, then the average pool and the "
                   "head. This photo's shapes:",
                   "Swin 的流程就是它的各个阶段：照片切成图块，各层在窗口内做注意力（每隔一层平移半个窗口），阶段之间"
                   "2×2 合并，最后平均池化和分类头。这张照片的形状："),
    "swin.trust": ("On a Swin, fast paints the removed patches in the photo's mean colour and thorough adds blur and "
                   "ROAD: its windows tile the whole grid, so patches are never dropped from the tokens.",
                   "对 Swin，快速检验把移除的图层涂成照片的平均颜色，全面检验再加上模糊和 ROAD：它的窗口铺满整个网格，"
                   "所以图层从不从词元序列中移除。"),
    "swin.input_size_fixed": ("A Swin runs here at its own {side}×{side} input only: every stage's grid must be a "
                              "whole number of its windows.",
                              "Swin 在这里只以它自己 {side}×{side} 的输入运行：每个阶段的网格都必须是整数个窗口。"),
    "swin.arch.title": ("**{model}**: Swin v{version}, {parameters} parameters.",
                        "**{model}**：Swin v{version}，{parameters} 个参数。"),
    "swin.arch.cache": ("This photo's analysis keeps {mb} MB: every layer's window attention and token norms.",
                        "这张照片的分析保留 {mb} MB：每一层的窗口注意力和词元范数。"),
    "swin.arch.step": ("step", "步骤"),
    "swin.arch.shape": ("shape", "形状"),
    "swin.arch.windows": ("windows", "窗口"),
    "swin.arch.heads": ("heads", "头"),
    "swin.arch.shifts": ("shift per layer", "每层的平移"),
    "swin.arch.input": ("input", "输入"),
    "swin.arch.patches": ("patches of {patch}×{patch} pixels, LayerNorm", "{patch}×{patch} 像素的图层，LayerNorm"),
    "swin.arch.merge": ("patch merging 2×2", "2×2 图层合并"),
    "swin.arch.stage": ("stage {stage}: {layers} layers", "第 {stage} 阶段：{layers} 层"),
    "swin.arch.pool": ("LayerNorm, average pool", "LayerNorm，平均池化"),
    "swin.arch.head": ("head", "分类头"),
}
