"""How tests/cli/before/ was made: two tiny perturbed checkpoints (a ViT with registers on a non-square input, a
two-stage Swin), a photo, and the arrays and top-5 that ``python -m viz`` wrote for them while a ViT and a Swin each had
their own code path (``PYTHONPATH=CHECKOUT python make_before.py OUT`` from such a checkout). test_before_outputs.py
holds today's one path to them."""
import json, subprocess, sys, os
from pathlib import Path
import numpy as np, torch
from PIL import Image
import skimage.data
from vit.model import ViTConfig, VisionTransformer
from vit.swin import SwinConfig, SwinTransformer
from vit.checkpoints.files import save_checkpoint
from vit.preprocess import Preprocess

out = Path(sys.argv[1]).resolve(); out.mkdir(parents=True, exist_ok=True)

def perturbed(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    return model.eval()

labels = [f"class {i}" for i in range(5)]
vit = perturbed(VisionTransformer(ViTConfig(img_size=(48, 64), patch_size=8, num_classes=5, embed_dim=48, depth=3,
                                            num_heads=3, mlp_dim=96, num_reg_tokens=2)), 1)
swin = perturbed(SwinTransformer(SwinConfig(img_size=(64, 64), patch_size=4, num_classes=5, embed_dim=24,
                                            depths=(2, 2), num_heads=(2, 4), window_size=(4, 4))), 2)
for name, model in {"vit": vit, "swin": swin}.items():
    crop = model.cfg.img_size
    save_checkpoint(out / f"{name}.pth", model, labels, Preprocess(resize=crop, crop=crop, mean=(0.5,)*3, std=(0.5,)*3, resize_mode="squash"))
photo = out / "photo.png"
Image.fromarray(skimage.data.chelsea()[::4, ::4]).save(photo)
cases = {
    "vit": ["--explain", "gae,attnlrp,gradcam,rollout,attention", "--layer", "1", "--head", "2", "--query", "2", "3"],
    "vit_masked": ["--mask-artifacts", "--query", "1", "4", "--query-rollout", "--discard-ratio", "0.5", "--fusion", "max"],
    "swin": ["--explain", "gae,gradcam,attnlrp,rollout,attention", "--layer", "2", "--query", "5", "6"],
}
for case, args in cases.items():
    weights = out / ("swin.pth" if case.startswith("swin") else "vit.pth")
    d = out / "run" / case
    r = subprocess.run([sys.executable, "-m", "viz", str(photo), "--weights", str(weights), "--out", str(d), "--quiet", *args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (run,) = [p for p in d.iterdir() if p.is_dir()]
    with np.load(run / "attention.npz") as f:
        arrays = {k: f[k] for k in f.files}
    result = json.loads((run / "result.json").read_text())
    np.savez_compressed(out / f"expected_{case}.npz", **arrays)
    (out / f"expected_{case}.json").write_text(json.dumps({"args": args, "top_k": result["top_k"]}, indent=1))
    print(case, sorted(arrays))
