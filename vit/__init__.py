"""A from-scratch Vision Transformer, Swin Transformer and video transformers, checkpoint loading, preprocessing and
attention capture."""
from .checkpoints.files import save_checkpoint
from .labels import imagenet_labels
from .checkpoints.load import WEIGHTS_DIR, LoadedModel, list_local_checkpoints, load, weights_dir
from .model import AttentionCapture, TokenLayout, ViTConfig, VisionTransformer, variant
from .preprocess import Preprocess
from .architecture import Architecture, BlockLayout
from .swin import SwinConfig, SwinTransformer, WindowCapture, swin_variant
from .video import VideoCapture, VideoConfig, VideoTransformer

__all__ = ["Architecture", "AttentionCapture", "BlockLayout", "LoadedModel", "Preprocess", "SwinConfig",
           "SwinTransformer", "TokenLayout", "VideoCapture", "VideoConfig", "VideoTransformer",
           "ViTConfig", "VisionTransformer", "WEIGHTS_DIR", "WindowCapture", "imagenet_labels",
           "list_local_checkpoints", "load", "save_checkpoint", "swin_variant", "variant", "weights_dir"]
