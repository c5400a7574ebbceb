"""The Video tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``): those of the
page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.video": ("Video", "视频"),
    "about.video": (
        "For a video model: upload a short clip. Each sampled frame with where the model's readout looks (attention "
        "rollout through every space and time step); the slider picks a frame. Below, how far in time each head "
        "attends (frames) beside how far in space (pixels), step by step: a TimeSformer's time and space steps apart.",
        "用于视频模型：上传一段短视频。每个采样帧上显示模型读出所关注的位置（经过每个空间与时间步骤的注意力展开）；"
        "滑块选择一帧。下方是每个头在时间上关注多远（帧）与在空间上关注多远（像素），逐步显示：TimeSformer 的时间步与"
        "空间步分开显示。"),
    "video.upload": ("Video clip", "视频片段"),
    "video.model": ("Video model", "视频模型"),
    "video.button": ("Analyse the clip", "分析片段"),
    "video.top5": ("Top-5 classes of the clip", "片段的前 5 个类别"),
    "message.video_refused": ("This video cannot be analysed: {reason}", "无法分析这个视频：{reason}"),
    "picture.video_frame": ("This frame, rolled out", "该帧的注意力展开"),
    "picture.video_strip": ("Every sampled frame", "每个采样帧"),
    "picture.video_distance": ("Attention distance in time and in space", "时间与空间上的注意力距离"),
    "video.frame": ("Frame", "帧"),
    "message.video_needs_model": ("The Video tab reads clips with a video model (VideoMAE, TimeSformer, ViViT, V-JEPA 2); {name} "
                          "reads photos: choose a video model above.",
                          "视频页使用视频模型（VideoMAE、TimeSformer、ViViT、V-JEPA 2）读取片段；{name} 读取的是照片："
                          "请在上方选择一个视频模型。"),
    "video.in_video_tab": ("{name} is a video model: it reads clips, not photos. Open the Video tab (Where it looks) "
                           "and choose it there.",
                           "{name} 是视频模型：它读取视频片段，而不是照片。请打开“视频”页（看哪里）并在那里选择它。"),
    "message.video_none": ("Upload a clip to see where the model looks in each frame.",
                   "上传一段视频，查看模型在每一帧中关注的位置。"),
    "video.summary": ("{frames} frames sampled of {total} ({seconds:.1f} s): {top}",
                      "从 {total} 帧（{seconds:.1f} 秒）中采样 {frames} 帧：{top}"),

    # ---- class maps per frame (``viz.video.classmap``; one choice per entry of its VIDEO_METHODS) ----
    "about.video_classmap": (
        "**Which part of which frame made it say this class.** Pick one of the clip's top-5 classes and a method; "
        "the map is drawn on every sampled frame on one scale for the whole clip, so a pale frame counted for less "
        "than a bright one (not for nothing). It runs the clip forward and back again: a few times the analysis's "
        "memory and time.",
        "**哪一帧的哪一部分让模型说出这个类别。** 从片段的前 5 个类别中选一个，再选一种方法；类别图画在每个采样帧上，"
        "整个片段使用同一个色标，所以颜色浅的帧贡献较小（而不是没有贡献）。它要让片段前向再反向各走一遍："
        "内存和时间是分析的几倍。"),
    "video.class": ("Class to explain", "要解释的类别"),
    "video.method": ("Method", "方法"),
    "video.classmap_button": ("Explain this class", "解释该类别"),
    "picture.video_classmap_frame": ("This frame, explained", "该帧的类别图"),
    "picture.video_classmap_strip": ("Every sampled frame, explained", "每个采样帧的类别图"),
    "video.method.gradcam": ("Grad-CAM per frame", "逐帧 Grad-CAM"),
    "video.method_about.gradcam": (
        "Grad-CAM reads the tokens of the model's last attention step: each of their channels is weighted by how much "
        "the class's score rises with it (its gradient, averaged over the whole clip), the weighted channels are "
        "summed and what is below zero is dropped. It is coarse: one value per patch and time position (the frames "
        "of one tubelet share it), seen from the last step only, so it says where the evidence ended up, not how "
        "the model moved it there through time.",
        "Grad-CAM 读取模型最后一个注意力步骤的词元：每个通道按类别分数随它上升多少来加权（它的梯度，在整个片段上"
        "取平均），加权后的通道相加，去掉小于零的部分。它很粗糙：每个图块和时间位置只有一个值（同一管块里的帧共用"
        "它），只从最后一步看，所以它说明证据最终落在哪里，而不是模型如何在时间中把证据移到那里。"),
    "video.method.gae": ("GAE through space and time", "贯穿空间与时间的 GAE"),
    "video.method_about.gae": (
        "GAE (Chefer et al. 2021) follows the readout back through every attention step, space and time alike: each "
        "step's attention is weighted by its gradient for the class, the heads' positive parts averaged, and the "
        "relevance carried down step by step to the tubelets. Unlike Grad-CAM it sees how the model moved the "
        "evidence through time; it is drawn min-max scaled over the clip, so a faint frame holds less relevance, "
        "not none. It keeps every step's attention until the backward pass: several times Grad-CAM's memory.",
        "GAE（Chefer 等，2021）沿着每个注意力步骤（空间与时间）把读出往回追：每一步的注意力按它对该类别的梯度加权，"
        "取各头正的部分的平均，把相关性一步一步传回到各个管块。与 Grad-CAM 不同，它能看到模型如何在时间中移动证据；"
        "它在整个片段上做最小-最大缩放后绘制，所以颜色浅的帧相关性较少，而不是没有。它要把每一步的注意力保留到反向"
        "传播：内存是 Grad-CAM 的数倍。"),
    "video.classmap_summary": ("{method} for “{name}” ({probability:.1%}): strongest in frame {index} ({seconds:.2f} s).",
                               "“{name}”（{probability:.1%}）的{method}：在第 {index} 帧（{seconds:.2f} 秒）最强。"),
    "message.video_classmap_first": ("Analyse the clip first: a class map explains one of its top-5 classes.",
                                     "请先分析片段：类别图解释的是它前 5 个类别中的一个。"),
    "message.video_class_unknown": ("Choose one of the clip's top-5 classes: {name} is not one of them.",
                                    "请从片段的前 5 个类别中选择：{name} 不在其中。"),
    "message.video_method_unknown": ("Choose a method among {methods}.", "请从以下方法中选择：{methods}。"),
    "job.video": ("The analysis of a clip of {frames} frames of {side} px", "{frames} 帧、{side} 像素片段的分析"),
    "job.video_classmap": ("A class map of a clip of {frames} frames of {side} px",
                           "{frames} 帧、{side} 像素片段的类别图"),
}

PICTURES = {
    "video.frame_caption": ("frame {index}, {seconds:.2f} s", "第 {index} 帧，{seconds:.2f} 秒"),
    "axis.step": ("attention step", "注意力步骤"),
    "axis.temporal_distance": ("mean distance in time (frames)", "时间上的平均距离（帧）"),
    "axis.spatial_distance": ("mean distance in space (pixels)", "空间上的平均距离（像素）"),
    "picture.temporal_distance": ("How far in time each head attends", "每个头在时间上关注多远"),
    "picture.spatial_distance": ("How far in space each head attends", "每个头在空间上关注多远"),
    "picture.video_gradcam": ("Grad-CAM per frame for {name}: which part of which frame made the model say it",
                              "“{name}”的逐帧 Grad-CAM：哪一帧的哪一部分让模型作出这个判断"),
    "picture.video_classmap": ("{method} for {name}", "“{name}”的{method}"),
    "picture.video_gae": ("GAE per frame for {name}: gradient-weighted attention carried through every space and time "
                          "step",
                          "“{name}”的逐帧 GAE：梯度加权的注意力经过每个空间与时间步骤传递"),
    "picture.video_trust": ("Removing and revealing the clip's tubelets for {name} (p = {probability:.2f}), removed "
                            "tubelets: {variant}",
                            "对“{name}”（p = {probability:.2f}）移除与显现片段的管块，被移除的管块：{variant}"),
    "video.trust.mean_colour": ("the clip's mean colour", "片段的平均颜色"),
    "video.trust.blur": ("each frame blurred", "每帧模糊后的图像"),
    "video.trust.axis.removed": ("fraction of tubelets removed", "移除的管块比例"),
    "video.trust.axis.kept": ("fraction of tubelets kept", "保留的管块比例"),
}

# ---- the attention views of one step (viz.video.attention): a step slider, a head choice, a clicked patch ----------

ATTENTION_PAGE = {
    "about.video_attention": (
        "**One attention step at a time.** Pick a step and a head (or the mean of the heads). The strip shows the "
        "readout's attention in that step over every frame, the grid each head's at the chosen frame. Click a patch "
        "of the chosen frame above: where it attends in every frame, and which patches attend to it.",
        "**逐个注意力步骤查看。** 选择一个步骤和一个头（或各头的平均）。条带显示读出在该步骤中对每一帧的注意力，网格显示"
        "每个头在所选帧上的注意力。点击上方所选帧中的一个图块：查看它在每一帧中关注哪里，以及哪些图块关注它。"),
    "video.step": ("Attention step", "注意力步骤"),
    "video.head": ("Head", "头"),
    "video.examples": ("Example clips (the moving-squares toy model)", "示例片段（移动方块玩具模型）"),
    "picture.video_readout": ("The readout's attention in this step, every frame", "读出在该步骤中的注意力（每一帧）"),
    "picture.video_heads": ("Each head at the chosen frame", "所选帧上的每个头"),
    "picture.video_patch_row": ("Where the clicked patch attends", "所点图块关注哪里"),
    "picture.video_patch_column": ("Which patches attend to it", "哪些图块关注它"),
    "video.step_joint": (
        "Step {step} of 0–{last} ({head}) is a joint step: every token attends to every token of every frame.",
        "第 {step} 步（共 0–{last} 步，{head}）是联合步骤：每个词元关注所有帧中的每个词元。"),
    "video.step_time": (
        "Step {step} of 0–{last} ({head}) is a time step: each patch attends only to the same place in the other "
        "frames, and the CLS token takes no part (it keeps itself), so the readout's row is empty here: the next "
        "step, a space step, shows it.",
        "第 {step} 步（共 0–{last} 步，{head}）是时间步骤：每个图块只关注其他帧中同一位置的图块，CLS 词元不参与（保持自身），"
        "因此这里读出的行为空：下一步（空间步骤）显示它。"),
    "video.step_space": (
        "Step {step} of 0–{last} ({head}) is a space step: each patch attends only inside its own frame, with the CLS "
        "token; the CLS token's row is the mean of its rows in every frame.",
        "第 {step} 步（共 0–{last} 步，{head}）是空间步骤：每个图块只在自己的帧内关注（连同 CLS 词元）；CLS 词元的行是它在"
        "每一帧中的行的平均。"),
    "video.readout_cls": ("The readout's row is the CLS token's.", "读出的行是 CLS 词元的行。"),
    "video.readout_mean": (
        "The model has no CLS token and reads the mean of the patch tokens: the readout's row is the mean of every "
        "patch's row.",
        "该模型没有 CLS 词元，读取图块词元的平均：读出的行是每个图块的行的平均。"),
    "video.readout_map": (
        "The model has no CLS token (its attentive probe reads the last step): the row shown is the mean of every "
        "patch's row.",
        "该模型没有 CLS 词元（其注意力探针读取最后一步）：显示的行是每个图块的行的平均。"),
    "video.uniform_note": (
        "Each picture has its own colour scale: a query attends over {tokens} tokens here, so attention spread evenly "
        "would read {uniform:.4f} everywhere; a colour bar whose ends are both near it shows no preference.",
        "每张图都有自己的色标：这里一个查询在 {tokens} 个词元上分配注意力，均匀分配时处处为 {uniform:.4f}；"
        "若色条两端都接近这个值，说明没有偏好。"),
    "video.patch_note": (
        "Clicked: row {row}, column {col} of frame {index} (time position {tau}), framed in green.",
        "已点击：第 {index} 帧（时间位置 {tau}）的第 {row} 行、第 {col} 列，以绿色框出。"),
    "message.video_bad_step": ("Choose an attention step of the analysed clip's model.",
                               "请选择已分析片段的模型中的一个注意力步骤。"),
    "message.video_bad_head": ("Choose one of the model's heads, or the mean of heads.",
                               "请选择模型的一个头，或各头的平均。"),
    "message.video_bad_click": ("Click on the chosen frame (below its caption) to pick a patch.",
                                "请点击所选帧（标题下方）来选择一个图块。"),
}

ATTENTION_PICTURES = {
    "video.mean_of_heads": ("mean of heads", "各头平均"),
    "video.colorbar_attention": ("attention weight", "注意力权重"),
    "video.colorbar_readout": ("readout's attention, {where}", "读出的注意力，{where}"),
    "video.colorbar_row": ("clicked patch attends to, {where}", "所点图块关注，{where}"),
    "video.colorbar_column": ("attends to clicked patch, {where}", "关注所点图块，{where}"),
    "video.where": ("step {step}, {head}", "第 {step} 步，{head}"),
}

# ---- does the map say what the model uses? the deletion and insertion check of the drawn class maps --------------

CHECK_PAGE = {
    "about.video_check": (
        "**Does the map say what the model uses?** **Check this map** puts the class maps drawn above for the chosen "
        "class to the test: the clip's tubelets (one patch over the frames of one time position) are removed in the "
        "order the map ranks them, and the class's probability is read after each step, against a random order of "
        "the same tubelets: about 20 altered clips per map and as many for the random order, four to a forward pass.",
        "**这张图说的是模型真正用到的东西吗？** **检验这张图**检验上方为所选类别画出的类别图：按图的排序移除片段的管块"
        "（一个图块在一个时间位置的几帧上），每一步之后读出该类别的概率，并与同一组管块的随机顺序比较。"
        "每张图约 20 个改动后的片段，随机顺序也一样多，每次前向计算四个。"),
    "video.check_button": ("Check this map", "检验这张图"),
    "picture.video_check": ("Deletion and insertion over the clip's tubelets", "对片段管块的删除与插入"),
    "video.check_progress": ("checking the map", "正在检验类别图"),
    "message.video_check_first": (
        "Explain this class first: the check tests the class maps drawn for “{name}”, and none is drawn yet.",
        "请先解释该类别：检验针对为“{name}”画出的类别图，目前还没有画出任何一张。"),
    "video.check_head": (
        "**{name}** (probability {probability:.2f}) · removed tubelets show {variant} (the library's default "
        "baseline) · {points} points per curve · against a random order of the same tubelets",
        "**{name}**（概率 {probability:.2f}）· 被移除的管块显示为{variant}（库的默认基线）· 每条曲线 {points} 个点 · "
        "与同一组管块的随机顺序比较"),
    "video.check_read": (
        "**How to read the curves.** *Deletion*: the tubelets the map ranks highest are removed first. If the map "
        "ranks first the tubelets the model uses, the class's probability falls fast and the area under the curve "
        "(AUC) is below the random order's (grey, dashed). *Insertion*: only the tubelets the map ranks highest are "
        "shown first; the probability should rise fast, its AUC above the random order's.",
        "**怎样读这些曲线。** *删除*：先移除图排得最高的管块。如果图把模型真正用到的管块排在前面，该类别的概率会很快下降，"
        "曲线下面积（AUC）低于随机顺序的（灰色虚线）。*插入*：先只显示图排得最高的管块；概率应当很快上升，"
        "AUC 高于随机顺序的。"),
    "video.check_bullet": ("**{method}**: {verdict}. {numbers} {meaning}", "**{method}**：{verdict}。{numbers}{meaning}"),
    "video.check_numbers": (
        "Deletion AUC {deletion:.3f} against the random order's {random_deletion:.3f} (gain {deletion_gain:+.3f}), "
        "insertion AUC {insertion:.3f} against {random_insertion:.3f} (gain {insertion_gain:+.3f}); gain over random "
        "{gain:+.3f} ± {margin:.3f}:",
        "删除 AUC {deletion:.3f}，随机顺序为 {random_deletion:.3f}（增益 {deletion_gain:+.3f}）；插入 AUC {insertion:.3f}，"
        "随机顺序为 {random_insertion:.3f}（增益 {insertion_gain:+.3f}）；相对随机的增益 {gain:+.3f} ± {margin:.3f}："),
    "video.check_meaning.faithful": (
        "removing the tubelets it ranks first takes the class away faster than chance, and showing them first brings "
        "it back faster: they are ones the model uses.",
        "先移除它排在前面的管块比随机更快地让该类别消失，先显示它们也更快地让该类别回来：这些正是模型用到的管块。"),
    "video.check_meaning.inside": (
        "within the curves' own error of the random order, so on this clip its order cannot be told from chance.",
        "与随机顺序的差别在曲线本身的误差之内，所以在这个片段上，它的排序与随机无法区分。"),
    "video.check_meaning.not_faithful": (
        "worse than the random order: the tubelets it ranks first are not the ones the model uses.",
        "比随机顺序还差：它排在前面的管块并不是模型用到的。"),
    "video.check_legend": (
        "**Gain over random**: the method's insertion − deletion minus the random order's; it counts only beyond its ± "
        "(the two orders' sampling errors added, each how far its areas move between the curve's {points} points and "
        "every other one; at least 0.01). A deletion or insertion gain is positive where the map beats the random "
        "order.",
        "**相对随机的增益**：该方法的 插入 − 删除 减去随机顺序的；只有超出其 ± 才算数（两种顺序的采样误差之和，"
        "即用曲线的 {points} 个点与只用隔一个点时面积的差；至少 0.01）。删除或插入的增益为正，表示图胜过随机顺序。"),
    "video.check_one_way": (
        "One way of removing tubelets: a verdict can change under another (each frame blurred instead: {command}).",
        "只用了一种移除管块的方式：换一种方式结论可能改变（改为每帧模糊：{command}）。"),
    "job.video_check": ("The check of a class map of a clip of {frames} frames of {side} px",
                        "{frames} 帧、{side} 像素片段的类别图检验"),
}

register({**PAGE, **ATTENTION_PAGE, **CHECK_PAGE}, {**PICTURES, **ATTENTION_PICTURES})
