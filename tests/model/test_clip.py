"""Protects CLIP's text side: the offline tokenizer equals open_clip's (and transformers'), the text tower of an
OpenAI-layout state dict (partly float16) and of a Hugging Face CLIPModel folder equals the reference's, zero-shot
probabilities on a real photo equal open_clip's, the image–text score is differentiable, and the CLI writes
``"zero_shot"`` sorted. Tiny random-init models built here; no download.
"""
from __future__ import annotations

import copy
import json
import math

import numpy as np
import open_clip
import pytest
import torch
import torch.nn.functional as F
import transformers
from PIL import Image

import vit
from reference_models import assert_close, images, open_clip_tiny, randomize_, write_vocab_files
from vit.clip import Tokenizer, bundled_tokenizer, encode_texts, text_score, text_scorer, zero_shot
from vit.preprocess import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD
from viz.cli import main

TEXTS = ["a photo of a cat", "A photo of a DOG!!", "it’s a “red” cup, isn't it?", "Café naïve Zürich 2024",
         "日本の猫 🐱", "ＬＯＵＤ　ｔｅｘｔ ﬁne", "&amp; rock'n'roll…", "Москва, über-straße"]
PROMPTS = ["a photo of a cat", "a photo of a dog", "a photo of a red cup"]


def test_tokenizer_equals_open_clip_with_punctuation_and_non_ascii():
    ours, ref = bundled_tokenizer(), open_clip.get_tokenizer("ViT-B-32")
    assert torch.equal(ours(TEXTS), ref(TEXTS))
    long = "word " * 100                                    # cut to 77 ids, the last one EOT
    assert torch.equal(ours([long]), ref([long])) and ours([long])[0, -1] == ours.eot_id


def test_hugging_face_vocab_files_give_the_same_ids_as_transformers(tmp_path):
    vocab, merges = write_vocab_files(tmp_path)
    ours = Tokenizer.from_vocab_files(vocab, merges)
    ref = transformers.CLIPTokenizer(vocab=str(vocab), merges=str(merges))
    simple = ["a photo of a cat", "two dogs, playing!", "Café au lait"]
    expected = ref(simple, padding="max_length", max_length=77, return_tensors="pt").input_ids
    got = ours(simple)
    for row, text in enumerate(simple):                     # transformers pads with EOT, CLIP with 0
        n = int((got[row] != 0).sum())
        assert torch.equal(got[row, :n], expected[row, :n]), text
    assert torch.equal(ours(TEXTS), bundled_tokenizer()(TEXTS))


# --- OpenAI / open_clip layout ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def openai_clip(tmp_path_factory):
    """(loaded, reference): OpenAI's release layout with its float16 tensors; the reference runs the same
    rounded weights in float32."""
    model = open_clip_tiny()
    with torch.no_grad():
        model.logit_scale.fill_(math.log(100.0))           # OpenAI's trained temperature
    open_clip.model.convert_weights_to_lp(model, torch.float16)
    state = {**model.state_dict(),  # what torch.jit.load(OpenAI's file).state_dict() holds besides the weights
             "input_resolution": torch.tensor(64), "context_length": torch.tensor(77), "vocab_size": torch.tensor(49408)}
    path = tmp_path_factory.mktemp("openai") / "ViT-tiny.pt"
    torch.save(state, path)
    dtypes = {v.dtype for v in state.values() if v.is_floating_point()}
    assert dtypes == {torch.float16, torch.float32}       # partly float16, as OpenAI released them
    return vit.load(path), copy.deepcopy(model).float().eval()


def test_openai_layout_loads_float16_text_tower(openai_clip):
    loaded, ref = openai_clip
    assert loaded.format == "openai-clip" and loaded.text is not None
    cfg = loaded.text.model.cfg
    assert (cfg.width, cfg.depth, cfg.num_heads, cfg.proj_dim, cfg.mlp_act) == (128, 2, 2, 16, "quick_gelu")  # heads: W / 64
    assert loaded.text.logit_scale == pytest.approx(100.0)
    tokens = bundled_tokenizer()(PROMPTS)
    x = images(2, (64, 64))
    with torch.no_grad():
        assert_close(loaded.text.model(tokens), ref.encode_text(tokens), "text embedding")
        assert_close(loaded.model(x), ref.encode_image(x), "image embedding")


def test_zero_shot_equals_open_clip_on_a_real_photo(openai_clip, cat):
    loaded, ref = openai_clip
    transform = open_clip.image_transform(64, is_train=False, mean=OPENAI_CLIP_MEAN, std=OPENAI_CLIP_STD)
    x = transform(cat).unsqueeze(0)
    assert_close(loaded.preprocess(cat), x, "preprocessed photo")  # CLIP's bicubic resize and crop
    with torch.no_grad():
        image = F.normalize(ref.encode_image(x), dim=-1)
        text = F.normalize(ref.encode_text(open_clip.get_tokenizer("ViT-B-32")(PROMPTS)), dim=-1)
        expected = (ref.logit_scale.exp() * image @ text.T).softmax(dim=-1)
    got = zero_shot(loaded, cat, PROMPTS)
    assert got.shape == (1, 3)
    assert_close(got, expected, "zero-shot probabilities")
    assert expected.max() - expected.min() > 0.05           # the photo tells the prompts apart: a real test


def test_text_score_is_differentiable_and_gives_the_zero_shot_logits(openai_clip):
    loaded, _ = openai_clip
    x = images(2, (64, 64)).requires_grad_()
    scores = torch.stack([text_score(loaded, x, t) for t in PROMPTS], dim=-1)   # (B, 3)
    assert_close(scores.detach().softmax(dim=-1), zero_shot(loaded, x.detach(), PROMPTS), "softmax of scores")
    scores[:, 0].sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    embedding = loaded.model(x.detach())
    target = encode_texts(loaded, [PROMPTS[1]])
    expected = 100.0 * F.cosine_similarity(embedding, target, dim=-1)
    assert_close(text_scorer(loaded, PROMPTS[1])(embedding).detach(), expected.detach(), "score")


def test_a_model_without_text_tower_refuses_texts():
    cfg = vit.ViTConfig(img_size=32, patch_size=16, embed_dim=32, depth=1, num_heads=2, mlp_dim=64, num_classes=3)
    loaded = type("Loaded", (), {"model": vit.VisionTransformer(cfg).eval(), "text": None, "name": "tiny"})()
    with pytest.raises(ValueError, match="tiny has no text tower"):
        zero_shot(loaded, images(1, (32, 32)), ["a cat"])


# --- Hugging Face CLIPModel folder -----------------------------------------------------------------------------

def test_huggingface_clip_model_folder_with_its_tokenizer(tmp_path, cat):
    torch.manual_seed(0)
    config = transformers.CLIPConfig(
        vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                           image_size=32, patch_size=8),
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4),
        projection_dim=16)
    ref = randomize_(transformers.CLIPModel(config))
    ref.save_pretrained(tmp_path)
    write_vocab_files(tmp_path)
    loaded = vit.load(tmp_path)
    assert loaded.format == "huggingface-clip" and loaded.text.model.cfg.num_heads == 4
    assert loaded.text.tokenizer is not bundled_tokenizer()   # the folder's own files
    tokens = loaded.text.tokenizer(PROMPTS)
    x = images(2, (32, 32))
    with torch.no_grad():
        out = ref(input_ids=tokens, pixel_values=x)
    assert_close(zero_shot(loaded, x, PROMPTS), out.logits_per_image.softmax(dim=-1), "zero-shot probabilities")
    with torch.no_grad():                                   # transformers returns them normalised
        assert_close(F.normalize(loaded.model(x), dim=-1), out.image_embeds, "image embedding")
        assert_close(F.normalize(loaded.text.model(tokens), dim=-1), out.text_embeds, "text embedding")


# --- CLI -------------------------------------------------------------------------------------------------------

def test_cli_writes_zero_shot_sorted_and_says_there_are_no_classes(openai_clip, cat, tmp_path, capsys):
    loaded, _ = openai_clip
    cat.save(tmp_path / "cat.png")
    texts = "a photo of a dog,a photo of a cat,a photo of a red cup"
    assert main([str(tmp_path / "cat.png"), "--weights", loaded.source, "--texts", texts,
                 "--out", str(tmp_path / "out"), "--quiet"]) == 0
    result = json.loads((tmp_path / "out" / "cat" / "result.json").read_text())
    entries = result["zero_shot"]
    assert sorted(e["text"] for e in entries) == sorted(texts.split(","))
    probabilities = [e["probability"] for e in entries]
    assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) == pytest.approx(1.0)
    expected = zero_shot(loaded, cat, [e["text"] for e in entries])[0].numpy()
    np.testing.assert_allclose(probabilities, expected, rtol=1e-4)
    assert "top_k" not in result and "no classifier head" in result["notes"][0]
    assert result["readout"] == "cls" and result["captions"]["rollout"] == "CLS rollout"
    assert "no classifier head" in capsys.readouterr().err


def test_cli_refuses_texts_without_a_text_tower(tmp_path, capsys):
    cfg = vit.ViTConfig(img_size=32, patch_size=16, embed_dim=32, depth=1, num_heads=2, mlp_dim=64, num_classes=3)
    vit.save_checkpoint(tmp_path / "tiny.pt", vit.VisionTransformer(cfg), ["a", "b", "c"], vit.Preprocess(32, 32))
    Image.new("RGB", (40, 40)).save(tmp_path / "x.png")
    assert main([str(tmp_path / "x.png"), "--weights", str(tmp_path / "tiny.pt"), "--texts", "a cat"]) == 2
    assert "needs a CLIP checkpoint with a text tower" in capsys.readouterr().err
