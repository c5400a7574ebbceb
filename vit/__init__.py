"""A from-scratch Vision Transformer, checkpoint loading, preprocessing and attention capture."""
from .checkpoints.files import save_checkpoint
from .labels import imagenet_labels
from .checkpoints.load import WEIGHTS_DIR, LoadedModel, list_local_checkpoints, load, weights_dir
from .model import AttentionCapture, TokenLayout, ViTConfig, VisionTransformer, variant
from .preprocess import Preprocess

__all__ = ["AttentionCapture", "LoadedModel", "Preprocess", "TokenLayout", "ViTConfig", "VisionTransformer", "WEIGHTS_DIR",
           "imagenet_labels", "list_local_checkpoints", "load", "save_checkpoint", "variant", "weights_dir"]
