"""Protects the page's Concepts tab (``vit_explorer.tabs.concepts``) on SAEs trained in the test (``python -m
viz.concepts train`` on a tiny model and a folder of generated photos): opening it offers only the server's SAEs made
for the model (``--sae``) and draws what ``viz.concepts.view`` draws for the analysed crop; a click on a row picks
that latent, a click on the photo lists the latents active at that patch; switching a latent off gives the edit's
top-5 and rollouts, the rollouts without the artifact tokens exactly as the Rollout tab leaves them out; the language
switch keeps what is shown; no SAE for the model: the commands that make one; every value a visitor sends (SAE
names, latents, factors) gets one message in their language, and a public server opens only its listed SAEs, with
the same answer for a folder that exists and one that does not; the server's --sae option."""
from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
from PIL import Image
from skimage import data

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
import vit
from concept_cases import constructed_sae
from tiny_run import noise_images, tiny_checkpoint, tiny_swin_checkpoint
from viz.cli.concepts import main as concepts_main
from viz.concepts import view
from viz.i18n import t
from viz.panels.select import artifact_drop, rollout_of
from vit_explorer import api, server, state
from vit_explorer.tabs import concepts

pytestmark = pytest.mark.slow   # two SAEs trained (a few seconds each), then the tab's handlers

DEPTH, LATENTS = 3, 24


def train(weights, photos, out, layer):
    assert concepts_main(["train", str(photos), "--weights", str(weights), "--layer", str(layer), "--latents",
                          str(LATENTS), "--k", "3", "--crops", "1", "--epochs", "3", "--tokens-per-step", "64",
                          "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny model (8 × 8 patches of 8 px, 3 blocks, 6 classes) with an SAE on layer 1 (labelled), another tiny
    model (2 blocks, other weights) with its own SAE, and photos."""
    root = tmp_path_factory.mktemp("concepts_page")
    tiny = tiny_checkpoint(root / "tiny.pt", size=64, depth=DEPTH)
    other = tiny_checkpoint(root / "other.pt", size=64, depth=2)
    photos = root / "photos"
    noise_images(photos, 12, size=(72, 80))
    sae = train(tiny, photos, root / "saes" / "stripes", 1)
    (sae / "labels.json").write_text(json.dumps({"3": "three"}))
    train(other, photos, root / "saes" / "other", 0)
    cat = root / "cat.jpg"
    Image.fromarray(data.chelsea()).save(cat)
    return {"tiny": str(tiny), "other": str(other), "sae": str(sae), "other_sae": str(root / "saes" / "other"),
            "saes": root / "saes", "cat": str(cat), "photos": photos, "root": root}


@pytest.fixture
def listed(made, monkeypatch):
    """The server offers both SAEs (``--sae`` of their parent folder): one made for each model."""
    monkeypatch.setattr(state.SETTINGS, "saes", [str(p) for p in server.sae_folders(made["saes"])])
    monkeypatch.setattr(state.SETTINGS, "any_model", True)
    return made


def opened(made, lang="en", narrow=False, mask=True, photo=None):
    session = api.analyze(photo or made["cat"], made["tiny"])[0]
    return session, concepts.show(session, None, None, narrow, 0.6, mask, lang)


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def reference(made, session):
    """The SAE and the photo's codes as ``viz.concepts.view`` gives them, apart from the page's caches."""
    loaded = vit.load(made["tiny"])
    source = view.open_concepts(made["sae"], loaded)
    return loaded, source, view.photo_concepts(loaded, source, state.analysis(session.key).image)


def test_the_tab_offers_the_saes_made_for_the_model_and_draws_the_photos_concepts(listed):
    session, shown = opened(listed)
    box = shown["concepts_sae"]
    assert box.value == "stripes" and [value for _, value in box.choices] == ["stripes"]   # not the other model's
    assert box.choices[0][0] == t("concepts.choice.sae", "en", name="stripes", layer=1, latents=LATENTS)
    loaded, source, pc = reference(listed, session)
    found = view.strongest(pc, source)
    kept = shown["concepts_state"]
    assert (kept.sae, kept.latent, kept.patch, kept.edited) == ("stripes", found[0].latent, None, None)
    np.testing.assert_array_equal(pixels(shown["concepts_strongest"]), pixels(view.strongest_view(source, pc)))
    np.testing.assert_array_equal(pixels(shown["concepts_top"]), pixels(view.top_patches_view(source,
                                                                                               found[0].latent)))
    assert [value for _, value in shown["concepts_latent"].choices] == [str(c.latent) for c in found]
    assert shown["concepts_latent"].value == str(found[0].latent)
    assert any("three" in label for label, value in shown["concepts_latent"].choices if value == "3") == \
        (3 in [c.latent for c in found])                                               # labels.json names latent 3
    metrics = json.loads((listed["saes"] / "stripes" / "metrics.json").read_text())
    assert f"{metrics['fvu']:.1%}" in shown["concepts_line"] and "layer 1" in shown["concepts_line"]
    assert (t("concepts.line.fvu_worse", "en") in shown["concepts_line"]) == (metrics["fvu"] >= 1)
    assert shown["concepts_edit"] is None and shown["concepts_edit_line"] == t("concepts.line.edit_first", "en")


def test_clicks_pick_a_latent_and_list_the_latents_at_a_patch(listed):
    session, shown = opened(listed)
    kept = shown["concepts_state"]
    _, source, pc = reference(listed, session)
    third = kept.spans[2]
    picked = concepts.click_concept(SimpleNamespace(index=[5, (third[0] + third[1]) / 2]), kept, session, False, "en")
    assert picked["concepts_state"].latent == third[2] == view.strongest(pc, source)[2].latent
    np.testing.assert_array_equal(pixels(picked["concepts_top"]), pixels(view.top_patches_view(source, third[2])))
    assert concepts.click_concept(SimpleNamespace(index=[5, 2]), kept, session, False, "en") == {}   # the title
    photo = shown["concepts_photo"]
    x, y = 5.5 * photo.width / 8, 2.5 * photo.height / 8                                 # patch (2, 5)
    clicked = concepts.click_patch(SimpleNamespace(index=[x, y]), picked["concepts_state"], session, "en")
    assert clicked["concepts_state"].patch == (2, 5) and clicked["concepts_state"].latent == third[2]
    active = view.latents_at(pc, source, 2, 5)
    assert active and [line.split("**")[1] for line in clicked["concepts_patch"].splitlines()[2:]] == \
        [f"#{c.latent}" for c in active]
    assert {str(c.latent) for c in active} <= {value for _, value in clicked["concepts_latent"].choices}
    np.testing.assert_array_equal(pixels(clicked["concepts_photo"]), pixels(view.photo_view(pc, (2, 5))))
    typed = concepts.pick_latent(" 7 ", clicked["concepts_state"], session, False, "en")
    assert typed["concepts_state"].latent == 7 and typed["concepts_state"].patch == (2, 5)


def test_switching_a_latent_off_changes_the_top5_and_the_rollouts_leave_out_what_the_rollout_tab_does(listed):
    session, shown = opened(listed)
    kept = shown["concepts_state"]
    loaded, source, pc = reference(listed, session)
    a = state.analysis(session.key)
    drop = artifact_drop(a, True)
    expected = view.edit(loaded, source, pc, {kept.latent: 0.0}, drop=drop)
    switched = concepts.switch_latent(str(kept.latent), 0.0, kept, session, False, 0.6, True, "en")
    assert switched["concepts_state"].edited == (kept.latent, 0.0)
    assert list(switched["concepts_top5"]) == [label for label, _ in expected.top_after]
    assert list(switched["concepts_top5"].values()) == pytest.approx([p for _, p in expected.top_after], rel=1e-6)
    assert expected.kl > 0 and expected.top_after != expected.top_before
    e = concepts.EDITS.get((session.key, listed["sae"], kept.latent, 0.0, bool(drop is not None and drop.any())))
    # the rollout before the change: the Rollout tab's own (head mean, nothing discarded), artifacts left out alike
    np.testing.assert_allclose(e.rollout_before, rollout_of(a, "mean", 0.0, 0, True), rtol=2e-3, atol=1e-6)
    picture, line = view.edit_view(source, pc, expected)
    assert switched["concepts_edit_line"].startswith(line)
    np.testing.assert_array_equal(pixels(switched["concepts_edit"]), pixels(picture))
    doubled = concepts.switch_latent(str(kept.latent), 2.0, kept, session, False, 0.6, True, "en")
    assert doubled["concepts_edit_line"].startswith(f"Top-5 with latent {kept.latent} × 2: ")


def test_the_language_switch_keeps_what_is_shown_and_a_phone_gets_narrow_pictures(listed):
    session, shown = opened(listed)
    kept = shown["concepts_state"]
    photo = shown["concepts_photo"]
    clicked = concepts.click_patch(SimpleNamespace(index=[photo.width / 16, photo.height / 16]), kept, session, "en")
    switched = concepts.switch_latent("3", 0.0, clicked["concepts_state"], session, False, 0.6, True, "en")
    zh = concepts.show(session, switched["concepts_state"], "stripes", True, 0.6, True, "zh-CN")
    assert (zh["concepts_state"].latent, zh["concepts_state"].patch, zh["concepts_state"].edited) == (3, (0, 0),
                                                                                                      (3, 0.0))
    assert zh["concepts_edit_line"].startswith("关闭潜变量 3：three 后的前五类：")
    assert "第 1 层" in zh["concepts_line"] and zh["concepts_patch"].startswith("图块 (0, 0)")
    for name in ("concepts_strongest", "concepts_top", "concepts_edit"):
        assert zh[name].width <= 360, (name, zh[name].width)                 # drawn for a 390 px phone
    assert zh["concepts_top"].height <= 0.85 * 844     # the 64 patches unshrunk on its screen (the page's 85 vh)


def test_without_an_sae_for_the_model_the_tab_says_how_to_make_one(made, monkeypatch):
    monkeypatch.setattr(state.SETTINGS, "saes", [made["other_sae"]])           # another model's only
    for lang in ("en", "zh-CN"):
        session, shown = opened(made, lang)
        assert shown["concepts_state"] is None and shown["concepts_strongest"] is None
        assert shown["concepts_sae"].choices == []
        assert "python -m viz.concepts train FOLDER --weights tiny.pt --layer 1 --latents 64 --k 16 --out DIR\n" \
               "python app.py --weights tiny.pt --sae DIR" in shown["concepts_line"]
        assert shown["concepts_line"].startswith(t("note.concepts_none", lang, model="tiny.pt", commands="").split(
            "\n")[0])
    with pytest.raises(gr.Error, match="Pick an SAE first"):
        concepts.switch_latent("1", 0.0, None, session, False, 0.6, True, "en")


def test_a_swin_says_why_it_has_no_concepts(made, tmp_path, monkeypatch):
    monkeypatch.setattr(state.SETTINGS, "saes", [made["sae"]])
    swin = str(tiny_swin_checkpoint(tmp_path / "swin.pt"))
    session = api.analyze(made["cat"], swin)[0]
    shown = concepts.show(session, None, None, False, 0.6, True, "en")
    assert shown["concepts_line"] == t("one_sequence.concepts", "en") and shown["concepts_state"] is None


def test_hostile_values_get_one_message_in_the_visitors_language_and_change_nothing(listed):
    session, shown = opened(listed)
    kept = shown["concepts_state"]
    for latent in ("abc", "nan", "inf", "-1", str(LATENTS), "3.5", "1e30", None, "[1]", "../../etc/passwd"):
        for lang in ("en", "zh-CN"):
            with pytest.raises(gr.Error) as refused:
                concepts.pick_latent(latent, kept, session, False, lang)
            assert refused.value.message == t("message.concepts_latent", lang, last=LATENTS - 1)
            with pytest.raises(gr.Error):
                concepts.switch_latent(latent, 0.0, kept, session, False, 0.6, True, lang)
    for factor in (float("nan"), float("inf"), -0.5, 4.25, 1e300):
        with pytest.raises(gr.Error) as refused:
            concepts.switch_latent("1", factor, kept, session, False, 0.6, True, "zh-CN")
        assert refused.value.message == t("message.concepts_factor", "zh-CN", low=0, high=4)
    for index in ("x", None, [1], ["a", 2], [float("nan"), 1], [1, float("inf")], {"x": 1}):   # no page sends these
        assert concepts.click_patch(SimpleNamespace(index=index), kept, session, "en") == {}
        assert concepts.click_concept(SimpleNamespace(index=index), kept, session, False, "en") == {}
    far = concepts.click_patch(SimpleNamespace(index=[10**9, -5]), kept, session, "en")     # clamped to the grid
    assert far["concepts_state"].patch == (0, 7)                                        # of the 8 × 8 patches
    # a state of another photo: nothing drawn over what is shown
    other = api.analyze(str(listed["photos"] / "0000.png"), listed["tiny"])[0]
    assert concepts.pick_latent("1", kept, other, False, "en") == {}
    assert concepts.click_patch(SimpleNamespace(index=[1, 1]), kept, other, "en") == {}
    with pytest.raises(gr.Error) as refused:                                   # a folder with no SAE, on this machine
        concepts.pick_sae(str(listed["photos"]), session, kept, False, 0.6, True, "en")
    assert refused.value.message.startswith("Could not open this SAE: No SAE in ")


def test_a_public_server_opens_only_its_listed_saes_and_says_the_same_for_any_other(listed, monkeypatch, tmp_path):
    session, shown = opened(listed)
    monkeypatch.setattr(state.SETTINGS, "any_model", False)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "sae.json").write_text("SECRET")
    answers = set()
    for name in (listed["sae"], listed["other_sae"], str(secret), str(tmp_path / "missing"), "/dev/zero", "other (2)",
                 "../saes/stripes", "stripes/", {"x": 1}):
        with pytest.raises(gr.Error) as refused:
            concepts.pick_sae(name, session, shown["concepts_state"], False, 0.6, True, "en")
        answers.add(refused.value.message)
    assert answers == {t("message.saes_listed_only", "en")}
    assert concepts.pick_sae(" ", session, shown["concepts_state"], False, 0.6, True, "en") == {}   # the box emptied
    again = concepts.pick_sae(" stripes ", session, None, False, 0.6, True, "en")     # its display name: opened
    assert again["concepts_state"].folder == listed["sae"]
    with pytest.raises(gr.Error) as refused:                      # listed, but made for another model: why not
        concepts.pick_sae("other", session, None, False, 0.6, True, "en")
    assert refused.value.message.startswith("Could not open this SAE: This SAE was trained on another model's tokens")


def test_an_sae_worse_than_the_tokens_mean_is_said_to_be(made, monkeypatch, tmp_path):
    """metrics.json's FVU above 1 (the held-out tokens reconstructed worse than by their mean): the line says what it
    means, in both languages; below 1 it says nothing of the kind."""
    monkeypatch.setattr(state.SETTINGS, "saes", [])
    monkeypatch.setattr(state.SETTINGS, "any_model", True)
    worse = tmp_path / "worse"
    shutil.copytree(made["sae"], worse)
    metrics = json.loads((worse / "metrics.json").read_text())
    for fvu, warned in ((1.16, True), (0.4, False)):
        (worse / "metrics.json").write_text(json.dumps({**metrics, "fvu": fvu}))
        session = api.analyze(made["cat"], made["tiny"])[0]
        for lang in ("en", "zh-CN"):
            line = concepts.pick_sae(str(worse), session, None, False, 0.6, True, lang)["concepts_line"]
            said = t("concepts.line.metrics", lang, fvu=fvu, l0=metrics["l0"], pca=metrics["pca_fvu_at_l0"],
                     pca_k=metrics["pca_components"], dead=metrics["dead_fraction"],
                     photos=metrics["held_out"]["photos"])
            assert said in line and (t("concepts.line.fvu_worse", lang) in line) == warned, line


def test_a_local_server_opens_a_typed_sae_folder(made, monkeypatch):
    monkeypatch.setattr(state.SETTINGS, "saes", [])
    monkeypatch.setattr(state.SETTINGS, "any_model", True)
    session, shown = opened(made)
    assert "--sae DIR" in shown["concepts_line"] and t("note.concepts_typed", "en") in shown["concepts_line"]
    typed = concepts.pick_sae(made["sae"], session, None, False, 0.6, True, "en")
    assert typed["concepts_state"].folder == made["sae"] and typed["concepts_strongest"] is not None
    kept = concepts.show(session, typed["concepts_state"], made["sae"], False, 0.6, True, "en")   # opened again
    assert kept["concepts_sae"].value == made["sae"] and kept["concepts_state"].folder == made["sae"]


def test_the_servers_sae_option_lists_folders_by_name(made, tmp_path):
    assert server.parse_args(["--sae", "a", "--sae", "b"]).sae == ["a", "b"]
    assert server.sae_folders(made["saes"]) == [made["saes"] / "other", made["saes"] / "stripes"]
    assert server.sae_folders(made["sae"]) == [made["saes"] / "stripes"]
    for bad in (made["photos"], tmp_path / "missing"):
        with pytest.raises(ValueError, match="SAE"):
            server.sae_folders(bad)
    twin = tmp_path / "twin" / "stripes"
    twin.parent.mkdir()
    twin.symlink_to(made["sae"], target_is_directory=True)
    listed = state.SETTINGS.saes
    try:
        state.SETTINGS.saes = [made["sae"], str(twin), made["sae"]]
        assert state.listed_saes() == {"stripes": made["sae"], "stripes (2)": str(twin)}
    finally:
        state.SETTINGS.saes = listed


def test_on_the_augreg_vit_ti_the_edits_rollouts_leave_out_its_artifact_tokens_as_the_rollout_tab_does(
        augreg_weights, made, tmp_path, monkeypatch):
    """The real ViT-Ti has high-norm artifact tokens on the cat (the page masks them by default): an SAE of random
    weights made for its layer 6; the rollout before the edit is the Rollout tab's, those tokens left out alike, and
    a phone's pictures stay within its width."""
    loaded = vit.load(augreg_weights)
    sae = constructed_sae(tmp_path / "random", loaded, 6)
    monkeypatch.setattr(state.SETTINGS, "saes", [str(sae)])
    session = api.analyze(made["cat"], augreg_weights)[0]
    a = state.analysis(session.key)
    drop = artifact_drop(a, True)
    assert drop.sum() >= 2                                                  # the corner tokens
    shown = concepts.show(session, None, None, True, 0.6, True, "en")
    kept = shown["concepts_state"]
    switched = concepts.switch_latent(str(kept.latent), 0.0, kept, session, True, 0.6, True, "en")
    assert t("concepts.line.masked", "en") in switched["concepts_edit_line"]
    e = concepts.EDITS.get((session.key, str(sae), kept.latent, 0.0, True))
    np.testing.assert_allclose(e.rollout_before, rollout_of(a, "mean", 0.0, 0, True), rtol=2e-3, atol=1e-6)
    assert not e.rollout_before[drop].any() and not e.rollout_after[drop].any()
    unmasked = concepts.switch_latent(str(kept.latent), 0.0, kept, session, True, 0.6, False, "en")
    assert t("concepts.line.masked", "en") not in unmasked["concepts_edit_line"]
    for name in ("concepts_strongest", "concepts_top", "concepts_edit"):
        picture = switched.get(name, shown[name])
        assert picture.width <= 360, (name, picture.width)
