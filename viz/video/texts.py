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

register(PAGE, PICTURES)
