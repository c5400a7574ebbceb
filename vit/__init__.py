"""A from-scratch Vision Transformer, checkpoint loading, preprocessing and attention capture."""
from .model import TokenLayout, ViTConfig, VisionTransformer, variant

__all__ = ["TokenLayout", "ViTConfig", "VisionTransformer", "variant"]
