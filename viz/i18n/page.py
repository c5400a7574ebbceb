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
    # the sections the tabs are grouped in (vit_explorer.tabs.SECTIONS)
    "section.look": ("Where it looks", "看哪里"),
    "section.why": ("Why this class", "为什么是这个类别"),
    "section.inside": ("Inside the model", "深入模型"),
    "section.learn": ("Learn and compare", "学习与比较"),
    "label.top5": ("Top-5 classes", "前 5 个类别"),
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
        "文件中没有分类头读取哪些词元：假定为{description}（readout \"{readout}\"），即 timm 中 {family} 模型的默认设置"
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



    "choice.mean": ("mean", "平均"),
    "choice.max": ("max", "最大值"),
    "choice.min": ("min", "最小值"),
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
    # the limits of a public server (vit_explorer.limits): memory, queues, request bodies, uploads
    "message.job_stopped": ("Stopped: the page that asked for this has gone or cancelled it.",
                            "已停止：请求它的页面已关闭或取消了它。"),
    "message.busy": ("The server is busy with this kind of work: try again in about {seconds} s.",
                     "服务器正忙于这类工作：请约 {seconds} 秒后再试。"),
    "message.busy_address": (
        "Your address already has several requests of this kind waiting: try again in about {seconds} s.",
        "你的地址已有多个同类请求在排队：请约 {seconds} 秒后再试。"),
    "message.busy_session": (
        "This page already has several requests of this kind waiting: try again in about {seconds} s.",
        "本页面已有多个同类请求在排队：请约 {seconds} 秒后再试。"),
    "message.memory_refused": (
        "{job} would need about {need:.1f} GB of memory at its peak, more than this server allows at once "
        "({budget:.1f} GB). {advice}",
        "{job}在峰值时约需 {need:.1f} GB 内存，超过本服务器同时允许的 {budget:.1f} GB。{advice}"),
    "message.memory_no_advice": ("Run it on your own machine (python app.py --max-memory …).",
                                 "请在你自己的电脑上运行（python app.py --max-memory …）。"),
    "message.memory_busy": ("The server's memory is taken by other visitors' work: try again in about {seconds} s.",
                            "服务器的内存正被其他访客的工作占用：请约 {seconds} 秒后再试。"),
    "message.large_redraw_busy": (
        "Another large redraw is running: try again in a few seconds (or choose a smaller input size).",
        "另一个大尺寸重绘正在运行：请几秒后再试（或选择更小的输入尺寸）。"),
    "message.method_too_large": (
        "{method} at {side} px would need about {need:.1f} GB of memory, more than this server allows at once "
        "({budget:.1f} GB). {advice}",
        "{method}在 {side} 像素时约需 {need:.1f} GB 内存，超过本服务器同时允许的 {budget:.1f} GB。{advice}"),
    "message.body_too_large": ("This request is too large ({size:.1f} MB): the limit is {limit:.0f} MB.",
                               "这个请求太大（{size:.1f} MB）：上限是 {limit:.0f} MB。"),
    "message.upload_too_many_files": ("Send at most {limit} files in one upload.",
                                      "一次上传最多发送 {limit} 个文件。"),
    "message.uploads_per_client": (
        "Your address has uploaded {limit:.0f} MB in the last {minutes:.0f} minutes, this server's limit: try "
        "again in about {seconds:.0f} s.",
        "你的地址在最近 {minutes:.0f} 分钟内已上传 {limit:.0f} MB，达到本服务器的上限：请约 {seconds:.0f} 秒后再试。"),
    "message.too_fast": ("Too many requests from your address: try again in about {seconds:.0f} s.",
                         "你的地址请求过于频繁：请约 {seconds:.0f} 秒后再试。"),
    "advice.smaller_size": ("It fits at an input size of {side} px or less.",
                            "输入尺寸为 {side} 像素或更小时可以运行。"),
    "advice.other_methods": ("At this size these methods fit: {methods}.", "在这个尺寸下可以运行的方法：{methods}。"),
    "advice.without_sanity": ("It fits without the sanity check.", "不做健全性检验时可以运行。"),
    "advice.fast_check": ("The fast check fits.", "快速检验可以运行。"),
    "job.analysis": ("An analysis at {side} px", "{side} 像素的分析"),
    "job.render": ("Redrawing the maps at {side} px", "{side} 像素的重绘"),
    "job.explain": ("Explaining at {side} px", "{side} 像素的解释"),
    "job.trust": ("This trust check at {side} px", "{side} 像素的这次可信度检验"),
    "job.inside": ("Looking inside at {side} px", "{side} 像素的模型内部查看"),
    "job.compare": ("This comparison at {side} px", "{side} 像素的这次比较"),
    "job.animation": ("The animation at {side} px", "{side} 像素的动画"),
    "job.features": ("The dense features at {side} px", "{side} 像素的稠密特征"),
    "job.walk": ("The guided walk at {side} px", "{side} 像素的分步讲解"),
    "job.snapshots": ("The snapshots at {side} px", "{side} 像素的训练快照"),
    "job.zero_shot": ("Zero-shot scoring at {side} px", "{side} 像素的零样本打分"),
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
    "readout.cls": ("the CLS token", "CLS 词元"),
    "readout.map": ("the MAP probe's attention over the patch tokens", "MAP 探针对图块词元的注意力"),
    "readout.map_all": ("the MAP probe's attention over all tokens", "MAP 探针对所有词元的注意力"),
    "readout.mean": ("the mean of the patch tokens", "图块词元的均值"),
    "readout.mean_all": ("the mean of all tokens (prefix tokens included)", "所有词元（含前置词元）的均值"),
    "readout.cls_mean": ("the CLS token and the mean of the patch tokens side by side", "CLS 词元与图块词元的均值并列"),
    "readout.distilled": ("the mean of the CLS token's and the distillation token's heads", "CLS 词元与蒸馏词元两个头的平均"),
    "message.target_failed": ("Nothing to explain for that target: {error}", "无法解释这个目标：{error}"),
    "message.explain_failed": ("This model cannot be explained this way: {error}", "这个模型不能用这种方式解释：{error}"),
    "message.no_classes": (
        "This model has no classifier head (a backbone such as DINOv3: its output is features, not classes), so it has "
        "no class to explain, check or look inside for; with a CLIP checkpoint, tick typed texts instead.",
        "这个模型没有分类头（例如 DINOv3 这样的骨干网络：它输出的是特征，不是类别），因此没有可以解释、检验或深入查看的"
        "类别；如果是 CLIP 检查点，可以改为勾选输入的文本。"),


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
    "message.no_cjk_font": (
        "Pictures are drawn with English labels: this machine has no Chinese font. Install {font} "
        "(Debian/Ubuntu: `{command}`) and restart the app.",
        "图中文字暂以英文显示：本机没有中文字体。请安装 {font}（Debian/Ubuntu：`{command}`），然后重启应用。"),
    # a model of windows or stages on the page (read from its vit.architecture description)
    "summary.stages": ("**{model}** saw a {width}×{height} {input} as stages of {stages} tokens{windows}, {layers} "
                       "layers{took}.",
                       "**{model}** 看到 {width}×{height} 的{input}，各阶段分别为 {stages} 个词元{windows}，共 {layers} 层"
                       "{took}。"),
    "summary.windows": (", attending inside windows of {window} tokens", "，在 {window} 个词元的窗口内做注意力"),
    "note.layer_windows": ("Stage {stage}: a {grid} grid of tokens of {pixels}×{pixels} pixels, windows of {window} "
                           "tokens (outlined), shifted by {shift}.",
                           "第 {stage} 阶段：{grid} 的词元网格，每个词元 {pixels}×{pixels} 像素，窗口 {window} 个词元"
                           "（白线框出），平移 {shift}。"),
    "note.layer_grid": ("Stage {stage}: a {grid} grid of tokens of {pixels}×{pixels} pixels.",
                        "第 {stage} 阶段：{grid} 的词元网格，每个词元 {pixels}×{pixels} 像素。"),
    "note.no_rolled": ("A rolled-out row of one patch needs one sequence of tokens through every layer (a merge "
                       "joins 2×2 tokens): this is the chosen layer's.",
                       "单个图块的展开行需要贯穿各层的同一个词元序列（合并把 2×2 个词元并成一个）：这里显示所选层的。"),
    "note.input_size_windows": ("A Swin runs here at its own {side}×{side} input only: every stage's grid must be a "
                              "whole number of its windows.",
                              "Swin 在这里只以它自己 {side}×{side} 的输入运行：每个阶段的网格都必须是整数个窗口。"),
}
