"""CLIP's text side: the text tower (``text``), its tokenizer (``tokenizer``, offline) and zero-shot scoring (``zero_shot``).

The image tower is ``vit.VisionTransformer`` with CLIP's features (see ``vit.model``); a checkpoint that holds a
text tower loads into ``LoadedModel.text`` (a ``TextTower``).
"""
from .text import TextConfig, TextTransformer, infer_text_config
from .tokenizer import Tokenizer, bundled_tokenizer
from .zero_shot import (TextTower, encode_texts, image_text_logits, text_score, text_scorer, text_target,
                        text_tower, zero_shot)

__all__ = ["TextConfig", "TextTower", "TextTransformer", "Tokenizer", "bundled_tokenizer", "encode_texts",
           "image_text_logits", "infer_text_config", "text_score", "text_scorer", "text_target", "text_tower", "zero_shot"]
