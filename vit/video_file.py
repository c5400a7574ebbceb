"""Decode an untrusted video file into the frames a video model sees, or refuse it with one sentence a person
understands.

Decoding uses PyAV (FFmpeg's libraries, bundled in its wheels, so ``pip install av`` needs nothing from the system;
torchcodec, PyTorch's decoder, needs FFmpeg installed beside it). PyAV is an extra (``pip install
"vit-attention-explorer[video]"``): this module imports it only when a video is opened, and says how to install it
when it is missing.

Guards, in this order, each before the next step runs:

1. the file exists, is not empty and is at most ``max_bytes`` long;
2. FFmpeg opens it as a container with a video stream (a corrupt container, an audio-only file, a text file are
   refused by name);
3. from the container's header alone: the frame size is at most ``max_pixels`` (a huge frame), the duration at most
   ``max_seconds`` (a 10-hour file), and the stream has frames (0 frames);
4. decoding stops at the last sampled frame, after at most ``max_frames`` frames and ``max_decode_seconds`` seconds,
   whatever the header said; every decoded frame's own size is checked again before it is converted, and each
   sampled frame is resized and cropped as soon as it is decoded, so memory holds the model's frames, not the film.

Frames are sampled as the model's own processor samples them (``sample_indices``), then resized, cropped and
normalised as transformers' video processors do (``VideoPreprocess``: on uint8 tensors, bilinear with antialiasing,
which is what torchvision runs for them on the CPU; the same pixels to the grey level).
"""
from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

MAX_BYTES = 200 * 2**20          # largest video file read
MAX_PIXELS = 3840 * 2160         # largest frame (4K UHD); a larger one is refused before decoding
MAX_SECONDS = 10 * 60.0          # longest video (by its header)
MAX_FRAMES = 36_000              # most frames decoded to reach the sampled ones (10 minutes at 60 fps)
MAX_DECODE_SECONDS = 60.0        # wall-clock bound on decoding one video
INSTALL = 'pip install "vit-attention-explorer[video]"'
SAMPLINGS = ("uniform", "strided")
VIDEO_SUFFIXES = {".mp4", ".m4v", ".mov", ".webm", ".mkv", ".avi", ".mpg", ".mpeg"}   # a folder's videos


class VideoFileError(ValueError):
    """A video that cannot be analysed; ``str(error)`` is one sentence meant to be shown to the person as is."""


class VideoDecoderMissing(VideoFileError, ImportError):
    """PyAV is not installed: the sentence says how to install it."""


@dataclass(frozen=True)
class VideoLimits:
    max_bytes: int = MAX_BYTES
    max_pixels: int = MAX_PIXELS
    max_seconds: float = MAX_SECONDS
    max_frames: int = MAX_FRAMES
    max_decode_seconds: float = MAX_DECODE_SECONDS


class VideoInfo(NamedTuple):
    """What a video's header says (``probe_video``)."""
    frames: int                  # frames in the stream (counted from its packets when the header gives none)
    fps: float                   # average frames per second
    seconds: float               # duration
    width: int
    height: int
    codec: str


class Clip(NamedTuple):
    """The frames a model sees, and where they came from."""
    frames: np.ndarray           # (T, h, w, 3) uint8: resized and cropped, before normalisation
    indices: np.ndarray          # (T,) int: the sampled frames' indices in the video
    times: np.ndarray            # (T,) float: their times in seconds
    info: VideoInfo


def require_av():
    """The ``av`` module, or VideoDecoderMissing naming the extra to install."""
    try:
        import av
    except ImportError:
        raise VideoDecoderMissing(f"Reading videos needs PyAV, which is not installed: {INSTALL} (or pip install av)."
                                  ) from None
    return av


# First bytes of the video containers people upload: (offset, magic, name).
VIDEO_SIGNATURES = ((4, b"ftyp", "MP4/MOV video"), (0, b"\x1aE\xdf\xa3", "Matroska/WebM video"),
                    (8, b"AVI ", "AVI video"), (0, b"\x00\x00\x01\xba", "MPEG video"))


def video_kind(head: bytes) -> str | None:
    """What video container a file's first bytes are ("MP4/MOV video", …), None when they are not one."""
    for offset, magic, name in VIDEO_SIGNATURES:
        if head[offset:offset + len(magic)] == magic and (magic != b"AVI " or head.startswith(b"RIFF")):
            return name
    return None


def video_given_to_photos(kind: str) -> str:
    """The one sentence for a video given where a photo was expected: how to read it, PyAV named when missing."""
    try:
        require_av()
    except VideoDecoderMissing:
        return (f"This file is a video ({kind}), not a photo: reading videos needs PyAV, which is not installed "
                f"({INSTALL}).")
    return f"This file is a video ({kind}), not a photo: open it with a video model (see docs/video.md)."


def sample_indices(total: int, num_frames: int, sampling: str = "uniform", stride: int = 4) -> np.ndarray:
    """Which of ``total`` frames a model sees.

    "uniform": transformers' video processors' own ``sample_frames`` (``default_sample_indices_fn``): frame
    ⌊i·total/num_frames⌋ for i < num_frames, spread over the whole video. "strided": the model cards' clip of
    num_frames frames ``stride`` apart (their ``sample_frame_indices(clip_len, frame_sample_rate, seg_len)``), taken
    from the middle of the video instead of at a random place (a clip as at test time, the same every run); shorter
    videos repeat their last frame, as the cards' clip does at the end."""
    if sampling not in SAMPLINGS:
        raise ValueError(f"Unknown frame sampling {sampling!r}! Expected one of {SAMPLINGS}.")
    if num_frames < 1:
        raise ValueError(f"A clip needs at least one frame but got num_frames={num_frames}.")
    if total < 1:
        raise VideoFileError("The video has no frames.")
    if sampling == "uniform":
        if num_frames > total:
            raise VideoFileError(f"The video has {total} frame{'s' if total > 1 else ''}, fewer than the "
                                 f"{num_frames} the model reads.")
        return np.arange(num_frames, dtype=np.int64) * total // num_frames
    span = num_frames * stride
    start = max((total - span) // 2, 0)
    indices = np.linspace(start, start + span, num=num_frames)
    return np.clip(indices, start, min(start + span, total) - 1).astype(np.int64)


@dataclass(frozen=True)
class VideoPreprocess:
    """What transformers' video processors do to each sampled frame: the shorter side resized to ``resize`` (the
    longer side in proportion, truncated), the centre ``crop`` cut out (offset rounded down), then pixels × rescale
    (− 1 with ``offset``, ViViT's), − mean, ÷ std. ``num_frames`` frames are sampled (``sampling``)."""
    resize: int = 224                                 # shortest edge after resizing
    crop: tuple[int, int] = (224, 224)                # (H, W) the model takes
    interpolation: str = "bilinear"                   # "bilinear" or "bicubic" (antialiased, as torchvision)
    rescale: float = 1 / 255
    offset: bool = False                              # ViViT: pixels × rescale − 1 before the normalisation
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    num_frames: int = 16                              # frames the model reads
    sampling: str = "uniform"                         # ``sample_indices``
    stride: int = 4                                   # "strided": frames between two sampled ones

    def __post_init__(self):
        object.__setattr__(self, "crop", tuple(int(c) for c in self.crop))
        object.__setattr__(self, "mean", tuple(float(m) for m in self.mean))
        object.__setattr__(self, "std", tuple(float(s) for s in self.std))
        if self.interpolation not in ("bilinear", "bicubic"):
            raise ValueError(f"Unknown interpolation {self.interpolation!r}! Expected 'bilinear' or 'bicubic'.")
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"Unknown frame sampling {self.sampling!r}! Expected one of {SAMPLINGS}.")

    def resized_size(self, height: int, width: int) -> tuple[int, int]:
        """(H, W) of a frame after the resize (transformers' ``get_resize_output_image_size``, shortest edge)."""
        short, long = min(height, width), max(height, width)
        new_long = int(self.resize * long / short)
        return (self.resize, new_long) if height <= width else (new_long, self.resize)

    def crop_frames(self, frames: torch.Tensor) -> torch.Tensor:
        """uint8 frames (T, 3, H, W) -> uint8 (T, 3, h, w): resized (on uint8 with antialiasing, as torchvision resizes
        them on the CPU; bicubic in float, rounded and clamped as torchvision does) and centre-cropped."""
        H, W = frames.shape[-2:]
        size = self.resized_size(H, W)
        if size != (H, W):
            if self.interpolation == "bilinear":
                frames = F.interpolate(frames, size=size, mode="bilinear", align_corners=False, antialias=True)
            else:
                out = F.interpolate(frames.float(), size=size, mode="bicubic", align_corners=False, antialias=True)
                frames = out.clamp_(0, 255).round_().to(torch.uint8)
        (h, w), (H, W) = self.crop, frames.shape[-2:]
        if h > H or w > W:
            raise VideoFileError(f"The frames are {H}×{W} after resizing, smaller than the model's {h}×{w} input.")
        top, left = int((H - h) / 2.0), int((W - w) / 2.0)
        return frames[..., top:top + h, left:left + w]

    def normalise(self, frames: torch.Tensor) -> torch.Tensor:
        """uint8 frames (T, 3, h, w) -> the model input (T, 3, h, w) float32."""
        x = frames.float() * self.rescale
        if self.offset:
            x = x - 1
        mean = torch.tensor(self.mean, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, device=x.device).view(1, 3, 1, 1)
        return (x - mean) / std

    def __call__(self, frames: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Sampled RGB frames as decoded (T, H, W, 3) uint8 -> the model input (1, T, 3, h, w)."""
        x = torch.as_tensor(np.asarray(frames)).permute(0, 3, 1, 2)
        return self.normalise(self.crop_frames(x)).unsqueeze(0)

    def clip_tensor(self, frames: np.ndarray) -> torch.Tensor:
        """A ``Clip``'s frames, already resized and cropped (T, h, w, 3) uint8 -> the model input (1, T, 3, h, w)."""
        x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2)
        return self.normalise(x).unsqueeze(0)

    def choose(self, choice: str) -> "VideoPreprocess":
        """Only the model's own preprocessing ("own"): a video model's frames are always its processor's."""
        if choice != "own":
            raise ValueError(f"A video model's frames are prepared only as its own processor prepares them; "
                             f"got the choice {choice!r}, expected 'own'.")
        return self

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "VideoPreprocess":
        known = {f.name for f in dataclasses.fields(cls)}
        if set(d) - known:
            raise ValueError(f"Unknown video preprocessing fields {sorted(set(d) - known)}! Expected some of "
                             f"{sorted(known)}.")
        return cls(**d)


def probe_video(path: str | os.PathLike, limits: VideoLimits = VideoLimits()) -> VideoInfo:
    """The header of the video at ``path``, checked against ``limits`` (guards 1–3); VideoFileError otherwise."""
    av = require_av()
    _check_file(path, limits)
    with _open(av, path) as container:
        return _info(av, container, limits)


def read_clip(path: str | os.PathLike, preprocess: VideoPreprocess, num_frames: int | None = None,
              limits: VideoLimits = VideoLimits()) -> Clip:
    """The video at ``path`` -> the frames the model sees (``Clip``: resized and cropped uint8 frames, their indices
    and times), sampled as ``preprocess`` says (``num_frames`` overrides its count). Every guard of the module
    docstring runs first; VideoFileError with one sentence for a video that cannot be analysed."""
    n = num_frames or preprocess.num_frames
    frames, indices, info = _decode(path, n, preprocess, limits)
    times = indices / info.fps if info.fps > 0 else np.zeros(len(indices))
    return Clip(frames, indices, times.astype(np.float64), info)


def decode_frames(path: str | os.PathLike, indices, limits: VideoLimits = VideoLimits()) -> np.ndarray:
    """The video's frames at ``indices`` as decoded, (T, H, W, 3) uint8 RGB, under the same guards."""
    av = require_av()
    _check_file(path, limits)
    wanted = np.asarray(indices, dtype=np.int64)
    with _open(av, path) as container:
        info = _info(av, container, limits)
        return _frames_at(av, container, wanted, info, limits, lambda f: f)


def _decode(path, n: int, preprocess: VideoPreprocess, limits: VideoLimits):
    av = require_av()
    _check_file(path, limits)
    with _open(av, path) as container:
        info = _info(av, container, limits)
        indices = sample_indices(info.frames, n, preprocess.sampling, preprocess.stride)

        def crop(rgb: np.ndarray) -> np.ndarray:
            x = torch.from_numpy(rgb).permute(2, 0, 1).unsqueeze(0)
            return preprocess.crop_frames(x)[0].permute(1, 2, 0).numpy()

        frames = _frames_at(av, container, indices, info, limits, crop)
    return frames, indices, info


def _check_file(path, limits: VideoLimits) -> None:
    if path is None or str(path) == "":
        raise VideoFileError("No video was given. Please upload a video.")
    if not os.path.isfile(path):
        raise VideoFileError(f"The file {os.path.basename(str(path))!r} does not exist (any more). Please upload it "
                             f"again.")
    size = os.path.getsize(path)
    if size == 0:
        raise VideoFileError("The file is empty (0 bytes). Please upload a video.")
    if size > limits.max_bytes:
        raise VideoFileError(f"The video file is too large: {size / 2**20:.1f} MB, the limit is "
                             f"{limits.max_bytes / 2**20:.0f} MB.")


class _open:
    """``av.open`` as a context, its failures as one sentence."""

    def __init__(self, av, path):
        self.av, self.path = av, path

    def __enter__(self):
        try:
            self.container = self.av.open(os.fspath(self.path), mode="r", metadata_errors="ignore")
        except (self.av.error.FFmpegError, UnicodeDecodeError, ValueError) as e:
            raise VideoFileError(f"This file cannot be read as a video: FFmpeg does not recognise it as a video "
                                 f"container, or it is damaged ({_reason(e)}).") from None
        return self.container

    def __exit__(self, *exc):
        self.container.close()


def _reason(error: Exception) -> str:
    text = getattr(error, "strerror", None) or str(error)
    return text.split(":")[0].strip() or type(error).__name__


def _info(av, container, limits: VideoLimits) -> VideoInfo:
    """Guard 3, from the header alone."""
    if not container.streams.video:
        kinds = sorted({s.type for s in container.streams})
        what = f"only {' and '.join(kinds)} streams" if kinds else "no streams at all"
        raise VideoFileError(f"This file has no video stream ({what}). Please upload a video.")
    stream = container.streams.video[0]
    width, height = int(stream.codec_context.width or 0), int(stream.codec_context.height or 0)
    if width < 1 or height < 1:
        raise VideoFileError("The video stream declares no frame size, so it cannot be decoded.")
    if width * height > limits.max_pixels:
        raise VideoFileError(f"The video's frames are too large: {width}×{height} pixels, the limit is "
                             f"{limits.max_pixels / 1e6:.1f} megapixels. It was refused before decoding.")
    fps = float(stream.average_rate or stream.guessed_rate or 0)
    seconds = _seconds(stream, container)
    if seconds > limits.max_seconds:
        raise VideoFileError(f"The video is too long: {_clock(seconds)}, the limit is {_clock(limits.max_seconds)}."
                             f" It was refused before decoding.")
    frames = int(stream.frames or 0)
    if frames == 0:   # the header does not say: count the packets (no decoding), within the frame bound
        frames = _count_packets(av, container, stream, limits)
        if frames == 0:
            raise VideoFileError("The video has no frames: its video stream is empty.")
        try:
            container.seek(0)
        except av.error.FFmpegError as e:
            raise VideoFileError(f"The video cannot be read from its start again ({_reason(e)}).") from None
    if not fps and seconds > 0:
        fps = frames / seconds
    return VideoInfo(frames, fps, seconds, width, height, str(stream.codec_context.name))


def _seconds(stream, container) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000                    # AV_TIME_BASE
    return 0.0


def _count_packets(av, container, stream, limits: VideoLimits) -> int:
    count = 0
    try:
        for packet in container.demux(stream):
            if packet.size:
                count += 1
                if count > limits.max_frames:
                    raise VideoFileError(f"The video has more than {limits.max_frames} frames, more than this app "
                                         f"decodes.")
    except av.error.FFmpegError as e:
        raise VideoFileError(f"The video is damaged and cannot be read ({_reason(e)}).") from None
    return count


def _frames_at(av, container, wanted: np.ndarray, info: VideoInfo, limits: VideoLimits, keep) -> np.ndarray:
    """Decode in order up to the last wanted frame (guard 4), ``keep`` each wanted one (a frame may be wanted twice)."""
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    last, start = int(wanted.max()), time.monotonic()
    kept: dict[int, np.ndarray] = {}
    index = -1
    try:
        for frame in container.decode(stream):
            index += 1
            if index > limits.max_frames:
                raise VideoFileError(f"The video holds more frames than its header says; decoding stopped after "
                                     f"{limits.max_frames} frames.")
            if time.monotonic() - start > limits.max_decode_seconds:
                raise VideoFileError(f"Decoding the video took longer than {limits.max_decode_seconds:.0f} seconds "
                                     f"and was stopped.")
            if index in wanted and index not in kept:
                if frame.width * frame.height > limits.max_pixels:
                    raise VideoFileError(f"A frame of the video is {frame.width}×{frame.height} pixels, larger than "
                                         f"{limits.max_pixels / 1e6:.1f} megapixels; it was refused before decoding.")
                kept[index] = keep(frame.to_ndarray(format="rgb24"))
            if index >= last:
                break
    except av.error.FFmpegError as e:
        raise VideoFileError(f"The video is damaged and cannot be decoded ({_reason(e)}).") from None
    missing = [int(i) for i in wanted if int(i) not in kept]
    if missing:
        raise VideoFileError(f"The video ended after {index + 1} frame{'s' if index else ''}, before frame "
                             f"{missing[0]} its header promised; it is damaged or incomplete.")
    return np.stack([kept[int(i)] for i in wanted])


def _clock(seconds: float) -> str:
    """3725 -> '1 h 2 min 5 s'."""
    s = int(math.ceil(seconds))
    h, m, s = s // 3600, s % 3600 // 60, s % 60
    parts = [f"{h} h" if h else "", f"{m} min" if m else "", f"{s} s" if s or not (h or m) else ""]
    return " ".join(p for p in parts if p)
