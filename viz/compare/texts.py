"""The Compare tab's texts: key -> (English, Simplified Chinese), added to the one catalogue (``viz.i18n``):
those of the page, and those drawn into its pictures (in English where this machine cannot draw Chinese)."""
from ..i18n import register

PAGE = {
    "tab.compare": ("Compare", "比较"),
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
    "one_sequence.animate": ("The animation steps through the layers on one grid; this model's grid changes at every "
                         "stage, so the All heads tab shows its layers instead.",
                         "动画在同一网格上逐层播放各层；这个模型的网格在每个阶段都改变，所以请在“所有头”页查看它的各层。"),
}

PICTURES = {
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
}

register(PAGE, PICTURES)
